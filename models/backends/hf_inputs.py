"""Model inputs for a Qwen-VL-family model from a tokenizer and an image processor.

What transformers' Qwen3-VL processor does for images (its class also insists on a video
processor, which needs torchvision, and torchvision cannot be installed beside the CPU torch):
the chat template's one `<|image_pad|>` per image becomes as many as the image has merged
patches, and `mm_token_type_ids` marks them (the model's multimodal RoPE needs it).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch
    from PIL.Image import Image
    from transformers import PreTrainedTokenizerBase, ProcessorMixin, Qwen2VLImageProcessorPil

IMAGE_TOKEN = "<|image_pad|>"


class VLInputs:
    """tokenizer + image processor -> the keywords of model.generate()."""

    def __init__(self, tokenizer: PreTrainedTokenizerBase, image_processor: Qwen2VLImageProcessorPil) -> None:
        self.tokenizer = tokenizer
        self.image_processor = image_processor
        self.image_token_id = int(tokenizer.convert_tokens_to_ids(IMAGE_TOKEN))

    @classmethod
    def from_dir(cls, path: str | Path) -> VLInputs:
        from transformers import AutoTokenizer, Qwen2VLImageProcessorPil

        tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
        image_processor = Qwen2VLImageProcessorPil.from_pretrained(path, local_files_only=True)
        return cls(tokenizer, image_processor)

    def apply_chat_template(self, messages: list[dict[str, Any]], **kwargs: object) -> str:
        text: str = self.tokenizer.apply_chat_template(messages, tokenize=False, **kwargs)
        return text

    def __call__(self, text: str, images: list[Image]) -> dict[str, Any]:
        import torch

        out: dict[str, Any] = {}
        if images:
            vision = self.image_processor(images=images, return_tensors="pt")
            out["pixel_values"] = vision["pixel_values"]
            out["image_grid_thw"] = vision["image_grid_thw"]
            merge = int(self.image_processor.merge_size) ** 2
            pieces = text.split(IMAGE_TOKEN)
            if len(pieces) - 1 != len(images):
                raise ValueError(f"{len(pieces) - 1} image markers in the prompt for {len(images)} images")
            counts = [int(thw.prod()) // merge for thw in vision["image_grid_thw"]]
            expanded = (IMAGE_TOKEN * n + rest for n, rest in zip(counts, pieces[1:], strict=True))
            text = pieces[0] + "".join(expanded)
        encoded = self.tokenizer([text], return_tensors="pt", add_special_tokens=False)
        out["input_ids"] = encoded["input_ids"]
        out["attention_mask"] = encoded["attention_mask"]
        out["mm_token_type_ids"] = (encoded["input_ids"] == self.image_token_id).to(torch.int32)
        return out

    def decode(self, ids: torch.Tensor) -> str:
        text: str = self.tokenizer.decode(ids, skip_special_tokens=True)
        return text


class ProcessorInputs:
    """The same interface over a transformers processor (a trained model's own directory)."""

    def __init__(self, processor: ProcessorMixin) -> None:
        self.processor = processor
        self.tokenizer = processor.tokenizer

    def apply_chat_template(self, messages: list[dict[str, Any]], **kwargs: object) -> str:
        text: str = self.processor.apply_chat_template(messages, tokenize=False, **kwargs)
        return text

    def __call__(self, text: str, images: list[Image]) -> dict[str, Any]:
        return dict(self.processor(text=[text], images=images or None, return_tensors="pt"))

    def decode(self, ids: torch.Tensor) -> str:
        text: str = self.processor.decode(ids, skip_special_tokens=True)
        return text


# What hf:// and the quantizer build their inputs with: either of the two, by the model directory.
ModelInputs = VLInputs | ProcessorInputs
