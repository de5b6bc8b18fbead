"""TT-NN model implementations for vLLM, and the simulator they run on when no TT device is present."""
