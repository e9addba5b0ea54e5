"""Hand-written bindings for linalg ops whose Python signature PyTorch parses specially."""

FUNCTIONS: dict = {}   # name -> function exported as tscript.<name>
METHODS: dict = {}     # name -> function installed as Tensor.<name>
