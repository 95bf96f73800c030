"""The image decoders (``fn.decoders``): one module per operator."""
