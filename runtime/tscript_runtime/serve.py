"""`tsrt serve model.tsm --port N`: a small HTTP inference server on the standard library
(`http.server.ThreadingHTTPServer`: a thread per connection; `Model.run` may run on several at once).

    GET  /health             {"status": "ok"}
    GET  /info               the model: file, entry points with their signatures, parameters, native code
    POST /run                run `forward` (or the entry point named by --entry)
    POST /run/<entry>        run another entry point (a method exported with @tscript.jit.export)

A request body is one of

    JSON     {"inputs": [x, ...]}: each x nested lists (of the signature's dtype when it names one,
             else as `torch.tensor` makes them: float32, int64 or bool), a number, or
             {"dtype": "float32", "shape": [2, 3], "data": [...]} (data flat or nested); tuple,
             list and dict inputs as JSON lists and objects of those
    .npy     one array: the only input (told by the .npy magic, whatever the Content-Type)
    .npz     the inputs by their names in the signature, or arr_0, arr_1, ... (as np.savez names
             them); read like a .tsm member: no pickles, sizes bounded before anything is inflated

JSON requests are answered {"outputs": [y, ...]}, each tensor {"dtype": ..., "shape": [...], "data":
nested lists} (non-finite floats as JSON's NaN/Infinity extension), .npy/.npz requests with an .npz
of the outputs named as `tsrt run --output` names them (`output`, or `output.0`, `output.1`, ...).
Errors are JSON {"error": "..."}: 400 for bad JSON or inputs (count, dtype, shape, values an op
refuses), 404 unknown path or entry point, 405 wrong method, 411 no Content-Length, 413 a body over
the size limit (not read). 500 only for a bug in the server.
"""
from __future__ import annotations

import io
import json
import math
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np

from . import dtypes as dt
from .archive import NPY_MAGIC, read_array, read_zip
from .errors import OpError
from .signature import DictSpec, ListSpec, TensorSpec, TupleSpec

DEFAULT_MAX_REQUEST_BYTES = 16 << 20
TIMEOUT_SECONDS = 60  # a client that stops sending half way frees its thread after this


class RequestError(Exception):
    """A request the server refuses: `status` and a message for the client."""

    def __init__(self, status: HTTPStatus, message: str):
        super().__init__(message)
        self.status = status


def make_server(model, host: str = "127.0.0.1", port: int = 8000, entry: str = "forward",
                max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES) -> ThreadingHTTPServer:
    """A server (not yet serving: call `serve_forever`) answering requests for `model`; port 0
    picks a free port (`server.server_address`)."""
    model.entry(entry)  # an unknown default entry point is an error now, not per request
    handler = type("Handler", (_Handler,), {"model": model, "default_entry": entry,
                                            "max_request_bytes": max_request_bytes})
    server = ThreadingHTTPServer((host, port), handler)
    server.daemon_threads = True
    return server


class _Handler(BaseHTTPRequestHandler):
    model = None
    default_entry = "forward"
    max_request_bytes = DEFAULT_MAX_REQUEST_BYTES
    timeout = TIMEOUT_SECONDS
    server_version = "tsrt"

    def do_GET(self):
        routes = {"/health": lambda: {"status": "ok"}, "/info": self._info}
        self._answer(lambda: _json_reply(routes[self.path]()) if self.path in routes else self._not_found("GET"))

    def do_POST(self):
        self._answer(self._run)

    def do_PUT(self):
        self._answer(self._refuse_method)

    do_DELETE = do_PATCH = do_PUT

    def _answer(self, respond) -> None:
        try:
            status, content_type, body = respond()
        except RequestError as e:
            status, content_type, body = _error(e.status, str(e))
        except Exception as e:  # a bug: the client gets a 500, the server keeps serving
            status, content_type, body = _error(HTTPStatus.INTERNAL_SERVER_ERROR, f"internal error: "
                                                f"{type(e).__name__}: {e}")
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _not_found(self, method: str):
        known = "/health, /info" if method == "GET" else "/run, /run/<entry>"
        if self.path in ("/health", "/info", "/run") or self.path.startswith("/run/"):
            self._refuse_method()
        raise RequestError(HTTPStatus.NOT_FOUND, f"no such path {self.path!r} for {method} (try {known})")

    def _refuse_method(self):
        raise RequestError(HTTPStatus.METHOD_NOT_ALLOWED, f"{self.command} is not allowed on {self.path!r} "
                           f"(GET /health, GET /info, POST /run)")

    def _run(self):
        entry = self._entry()
        body = self._body()
        binary = body[:len(NPY_MAGIC)] == NPY_MAGIC or body[:2] == b"PK"
        spec = self.model.entry(entry).signature
        inputs = _binary_inputs(body, spec) if binary else _json_inputs(body, spec)
        try:
            outputs = self.model.run_method(entry, *inputs)
        except OpError as e:
            raise RequestError(HTTPStatus.BAD_REQUEST, str(e)) from None
        outputs = list(outputs) if isinstance(outputs, tuple) else [outputs]
        return _npz_reply(outputs) if binary else _json_reply({"outputs": [_to_json(o) for o in outputs]})

    def _entry(self) -> str:
        if self.path == "/run":
            return self.default_entry
        if not self.path.startswith("/run/"):
            self._not_found("POST")
        entry = self.path[len("/run/"):]
        if entry not in self.model.entry_points:
            raise RequestError(HTTPStatus.NOT_FOUND, f"the model has no entry point {entry!r} (it has: "
                               f"{', '.join(self.model.entry_points)})")
        return entry

    def _body(self) -> bytes:
        length = self.headers.get("Content-Length")
        if length is None:
            raise RequestError(HTTPStatus.LENGTH_REQUIRED, "a request body needs a Content-Length header")
        if not length.isdigit():
            raise RequestError(HTTPStatus.BAD_REQUEST, f"bad Content-Length {length[:40]!r}")
        if int(length) > self.max_request_bytes:
            self.close_connection = True  # the body is never read
            raise RequestError(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, f"the body has {length} bytes, more than "
                               f"the server's limit of {self.max_request_bytes} (--max-request-bytes)")
        body = self.rfile.read(int(length))
        if len(body) != int(length):
            raise RequestError(HTTPStatus.BAD_REQUEST, "the body ended before Content-Length bytes")
        return body

    def _info(self) -> dict:
        m = self.model
        return {"model": m.source, "producer": m.manifest.get("producer"), "default_entry": self.default_entry,
                "entry_points": {name: {"signature": str(e.signature), **e.signature.to_json()}
                                 for name, e in m.entry_points.items()},
                "parameters": {name: {"dtype": dt.NAMES[a.dtype], "shape": list(a.shape)}
                               for name, a in m.params.items()},
                "native_code": {name: ex.describe() for name, ex in m.executables.items()}}


# -- request bodies ---------------------------------------------------------------------------------

def _json_inputs(body: bytes, signature) -> list:
    try:
        request = json.loads(body)
    except (ValueError, RecursionError) as e:
        raise RequestError(HTTPStatus.BAD_REQUEST, f"the body is not valid JSON (nor a .npy/.npz file): "
                           f"{e}") from None
    if not isinstance(request, dict) or not isinstance(request.get("inputs"), list):
        raise RequestError(HTTPStatus.BAD_REQUEST, 'expected a JSON object {"inputs": [...]}')
    specs = [spec for _, spec in signature.inputs]
    values = request["inputs"]
    specs += [None] * (len(values) - len(specs))  # too many inputs: the signature's check says so
    try:
        return [_convert(v, s, f"input {i}") for i, (v, s) in enumerate(zip(values, specs))]
    except (ValueError, TypeError, OverflowError, RecursionError) as e:
        raise RequestError(HTTPStatus.BAD_REQUEST, str(e)) from None


def _convert(value, spec, where: str):
    """A JSON value as the input `spec` describes: arrays for tensors, containers of converted items."""
    if isinstance(value, dict) and "dtype" in value and not isinstance(spec, DictSpec):
        return _tagged(value, where)
    if isinstance(spec, TensorSpec) and isinstance(value, (list, int, float)):
        try:
            array = np.asarray(value, dtype=spec.dtype)
        except (ValueError, TypeError, OverflowError) as e:
            raise ValueError(f"{where}: not an array of {dt.NAMES.get(spec.dtype, 'numbers')} ({e})") from None
        if spec.dtype is None and array.dtype == np.float64:  # as torch.tensor([0.5]) is float32
            array = array.astype(dt.defaults.float_dtype)
        return array
    if isinstance(spec, (TupleSpec, ListSpec)) and isinstance(value, list):
        items = spec.items if isinstance(spec, TupleSpec) else [spec.item] * len(value)
        if len(items) == len(value):
            converted = [_convert(v, s, f"{where} item {i}") for i, (v, s) in enumerate(zip(items, value))]
            return tuple(converted) if isinstance(spec, TupleSpec) else converted
    if isinstance(spec, DictSpec) and isinstance(value, dict):
        return {k: _convert(v, spec.value, f"{where} key {k!r}") for k, v in value.items()}
    return value  # numbers, strings, None: the signature's check decides


def _tagged(value: dict, where: str) -> np.ndarray:
    """{"dtype": ..., "shape": [...], "data": [...]} as an array."""
    dtype, shape, data = value.get("dtype"), value.get("shape"), value.get("data")
    if dtype not in dt.BY_NAME:
        raise ValueError(f"{where}: unknown dtype {dtype!r} (expected one of {', '.join(dt.BY_NAME)})")
    if not (isinstance(shape, list) and all(type(d) is int and d >= 0 for d in shape)):
        raise ValueError(f"{where}: 'shape' must be a list of sizes, got {shape!r}")
    try:
        array = np.asarray(data, dtype=dt.BY_NAME[dtype])
    except (ValueError, TypeError, OverflowError) as e:
        raise ValueError(f"{where}: 'data' is not an array of {dtype} ({e})") from None
    if array.size != math.prod(shape):
        raise ValueError(f"{where}: 'data' holds {array.size} values, shape {shape} needs {math.prod(shape)}")
    return array.reshape(shape)


def _binary_inputs(body: bytes, signature) -> list:
    from .errors import ModelError
    try:
        if body[:len(NPY_MAGIC)] == NPY_MAGIC:
            return [read_array(bytearray(body), "the request's .npy body")]
        members = read_zip(io.BytesIO(body))
        arrays = {name.removesuffix(".npy"): read_array(data, f"the request's .npz member '{name}'")
                  for name, data in members.items()}
    except ModelError as e:
        raise RequestError(HTTPStatus.BAD_REQUEST, str(e)) from None
    for names in (signature.input_names, [f"arr_{i}" for i in range(len(arrays))]):
        if set(names) == set(arrays):
            return [arrays[n] for n in names]
    raise RequestError(HTTPStatus.BAD_REQUEST, f"the .npz holds {sorted(arrays)}; expected the inputs named "
                       f"{signature.input_names} (or arr_0, arr_1, ... in order)")


# -- replies ----------------------------------------------------------------------------------------

def _to_json(value):
    if isinstance(value, np.ndarray):
        return {"dtype": dt.NAMES.get(value.dtype, str(value.dtype)), "shape": list(value.shape),
                "data": value.tolist()}
    if isinstance(value, (list, tuple)):
        return [_to_json(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _to_json(v) for k, v in value.items()}
    return value.item() if isinstance(value, np.generic) else value


def _json_reply(data) -> tuple:
    return HTTPStatus.OK, "application/json", json.dumps(data).encode()


def _npz_reply(outputs: list) -> tuple:
    from .cli import flatten_outputs
    buf = io.BytesIO()
    np.savez(buf, **dict(flatten_outputs("output", outputs[0] if len(outputs) == 1 else tuple(outputs))))
    return HTTPStatus.OK, "application/x-npz", buf.getvalue()


def _error(status: HTTPStatus, message: str) -> tuple:
    return status, "application/json", json.dumps({"error": message}).encode()
