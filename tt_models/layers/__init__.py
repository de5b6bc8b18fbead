"""Model building blocks on TT-NN ops: attention with a paged KV cache, SwiGLU MLP, decoder layer."""
