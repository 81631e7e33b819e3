"""Everything about the pilot model: prompts, schemas, reply parser, profiles, request building.

Public API (import the submodules; this package imports nothing heavy):

- `models.profile`: `load_profile(name_or_path, overrides)` -> `ModelProfile` (served model name,
  point order "xy"/"yx", `Decoding`, `ThinkingOff`, `DepthConvention.scale(fx_px, width_px)`,
  `MaxTokens` per schema). Built-ins in models/profiles/*.yaml; `profile_names()`.
- `models.templates`: `PromptSwitches(think, plan_schema, visual_history)` and the prompt files in
  models/prompts/ (system message fixed per profile + switches; all that changes is in the user
  message).
- `models.pilot_prompt`: `PilotPrompt(profile, switches)` builds a step's `ChatRequest` from
  (instruction, history, encoded frame); `Conversation(prompt, instruction)` keeps one drone's
  history: `req = conv.request(image_bgr)`, `action = conv.parse(text, req)`, `conv.record(action)`
  once executed. `MultiDronePrompt(profile, n)` and `CommanderPrompt(profile, n)` for several drones
  (docs/protocol.md#several-drones).
- `models.request`: `ChatRequest` (`.to_body()` -> the /v1/chat/completions JSON body,
  `.messages()`, `.response_format()`, `.reply` -> `ReplySpec` with `parse_action` /
  `parse_multi` / `parse_orders`), `build_request`.
- `models.parser`: `parse_action(text, point_order, think, plan)`, `parse_multi(text, n, ...)`,
  `parse_commander(text, n)` -> typed `common.actions` values or `ParsedOrder`s; anything else raises
  `common.errors.MalformedReply` (with `.reason` and `.raw`), never another exception.
- `models.commanders`: the fleet-level pilots, `RuleCommander` (distinct candidates by bearing)
  and `ModelCommander` (one model call for N drones' orders), behind the `Commander` protocol;
  shared by the ground station's `CommanderStructure` and the episode runner.
- `models.schemas`: `action_schema`, `plan_schema`, `multi_schema`, `commander_schema`,
  `SchemaKind`, `schema_for`.
- `models.history`: `compact(action, point_order)`, `render_history(actions, point_order)`,
  `ActionHistory` (last 5 executed actions and their views).
- `models.frames`: `encode_frame(image_bgr)` -> `EncodedFrame(jpeg, width_px, height_px)`,
  `jpeg_data_url`, `encode_history_view` (half width).
- `models.identity`: `prompt_identity(profile, switches, structure, n)` -> `PromptIdentity`
  (sha256 per prompt file and one combined identity hash) for the episode log.

A backend only needs `request.to_body()` (or `.messages()` + `.response_format()`) and returns
the reply text; the pilot then calls `parse`, and a `MalformedReply` means hold.
"""
