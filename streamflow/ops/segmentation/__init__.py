"""``segmentation.*`` operators: polygon masks and label maps (``fn.segmentation``)."""
