"""The readers (``fn.readers``): one module per reader, and the list-reader base they share."""
