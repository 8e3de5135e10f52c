"""Pure DataFrame/Arrow transforms of the data path: decode, window, encode, merge, accounting."""
