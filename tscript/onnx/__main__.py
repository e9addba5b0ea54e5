"""`python -m tscript.onnx`: print the README's lists of the ops tscript.onnx exports and imports."""
from .ops_doc import markdown

print(markdown())
