"""ttnn.transformer: attention ops."""

from .attention import chunked_scaled_dot_product_attention, scaled_dot_product_attention
from .sdpa_decode import paged_scaled_dot_product_attention_decode, scaled_dot_product_attention_decode

__all__ = [
    "chunked_scaled_dot_product_attention",
    "paged_scaled_dot_product_attention_decode",
    "scaled_dot_product_attention",
    "scaled_dot_product_attention_decode",
]
