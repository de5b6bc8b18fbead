"""ttnn.transformer: attention ops."""

from .attention import chunked_scaled_dot_product_attention, scaled_dot_product_attention
from .mla import (
    chunked_flash_mla_prefill,
    flash_mla_prefill,
    flash_multi_latent_attention_decode,
    paged_flash_multi_latent_attention_decode,
)
from .sdpa_decode import paged_scaled_dot_product_attention_decode, scaled_dot_product_attention_decode

__all__ = [
    "chunked_flash_mla_prefill",
    "chunked_scaled_dot_product_attention",
    "flash_mla_prefill",
    "flash_multi_latent_attention_decode",
    "paged_flash_multi_latent_attention_decode",
    "paged_scaled_dot_product_attention_decode",
    "scaled_dot_product_attention",
    "scaled_dot_product_attention_decode",
]
