"""Fuzz `tscript.ir.parse_ir` with IR text (the input, as UTF-8; seeds: printed graphs).

Allowed: IRParseError, or a Graph whose printed text parses back to the same text and which
`verify` accepts or refuses with IRVerifyError. Anything else is a finding (harness.py), as are a
hang (-timeout) and a crash.

    python fuzz/fuzz_ir_parser.py fuzz/corpus/ir -dict=fuzz/ir.dict -max_total_time=600 -timeout=10
"""
import atheris

with atheris.instrument_imports(include=["tscript.ir"]):
    from tscript.ir import IRParseError, IRVerifyError, parse_ir, verify

from harness import Finding, finding, main


def exercise(text: str) -> None:
    """Parse, print, parse the print, verify; allowed outcomes return, anything else raises."""
    try:
        graph = parse_ir(text)
    except IRParseError:
        return
    printed = str(graph)
    again = str(parse_ir(printed))
    if again != printed:
        raise Finding(f"the printed graph parses to other text:\n{printed}\n--- printed again ---\n{again}")
    try:
        verify(graph)
    except IRVerifyError:
        pass


def test_one_input(data: bytes) -> None:
    with finding("ir", data, data, ".ir"):
        exercise(data.decode("utf-8", "replace"))


if __name__ == "__main__":
    main("ir", test_one_input)
