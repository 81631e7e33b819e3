"""Everything about the pilot model: prompts, schemas, reply parser, profiles, backends."""
