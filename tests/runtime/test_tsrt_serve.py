"""`tsrt serve`: the HTTP inference server answers JSON, .npy and .npz requests with the model's
outputs, /health and /info, and every bad request with a 4xx JSON error (never a 5xx); the command
starts on a free local port, serves, and stops cleanly on Ctrl-C."""
import http.client
import io
import json
import signal
import subprocess
import sys
import threading

import numpy as np
import pytest

import tscript as ts
import tscript_runtime as rt
from tests.script.module_programs import Encoder
from tscript import nn
from tscript_runtime.serve import make_server


class TwoInputs(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)

    def forward(self, x, y):
        return self.fc(x) + y, x.sum()


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("serve")
    ts.manual_seed(0)
    ts.jit.save(ts.jit.compile(TwoInputs().eval(), (ts.randn(2, 4), ts.randn(1, 3)), dynamic={0: [0]}),
                tmp / "two.tsm")
    ts.jit.save(ts.jit.script(Encoder()), tmp / "encoder.tsm")
    return tmp


@pytest.fixture(scope="module")
def server(files):
    """An in-process server for two.tsm on a free port; (host, port, model)."""
    model = rt.load(files / "two.tsm")
    srv = make_server(model, port=0, max_request_bytes=4096)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv.server_address[0], srv.server_address[1], model
    srv.shutdown()
    srv.server_close()


def request(address, method: str, path: str, body: bytes | None = None, headers: dict | None = None):
    """(status, content type, body) of one request."""
    connection = http.client.HTTPConnection(address[0], address[1], timeout=60)
    try:
        connection.request(method, path, body=body, headers=headers or {})
        response = connection.getresponse()
        return response.status, response.getheader("Content-Type"), response.read()
    finally:
        connection.close()


def post_json(address, obj, path="/run"):
    status, kind, body = request(address, "POST", path, json.dumps(obj).encode())
    assert kind == "application/json"
    return status, json.loads(body)


X = np.arange(8, dtype=np.float32).reshape(2, 4) / 8
Y = np.full((1, 3), 0.5, np.float32)


def test_json_inputs_as_nested_lists_and_tagged_arrays(server):
    model = server[2]
    expected = model.run(X, Y)
    status, reply = post_json(server, {"inputs": [X.tolist(), {"dtype": "float32", "shape": [1, 3],
                                                               "data": Y.ravel().tolist()}]})
    assert status == 200
    first, total = reply["outputs"]
    assert first["dtype"] == "float32" and first["shape"] == [2, 3]
    np.testing.assert_array_equal(np.array(first["data"], np.float32), expected[0])
    assert total["shape"] == [] and total["data"] == pytest.approx(float(expected[1]))


def test_npy_and_npz_bodies_get_npz_replies(server):
    model = server[2]
    expected = model.run(X, Y)
    buf = io.BytesIO()
    np.savez(buf, x=X, y=Y)
    status, kind, body = request(server, "POST", "/run", buf.getvalue())
    assert status == 200 and kind == "application/x-npz"
    out = np.load(io.BytesIO(body), allow_pickle=False)
    np.testing.assert_array_equal(out["output.0"], expected[0])
    buf = io.BytesIO()
    np.savez(buf, X, Y)  # arr_0, arr_1: in order
    status, _, body = request(server, "POST", "/run", buf.getvalue())
    assert status == 200
    np.testing.assert_array_equal(np.load(io.BytesIO(body))["output.1"], expected[1])
    buf = io.BytesIO()
    np.save(buf, X)  # one array: the only input, and this model has two
    status, kind, body = request(server, "POST", "/run", buf.getvalue())
    assert status == 400 and "forward() expects 2 inputs (x, y), got 1" in json.loads(body)["error"]


def test_health_and_info(server):
    assert request(server, "GET", "/health")[::2] == (200, b'{"status": "ok"}')
    status, _, body = request(server, "GET", "/info")
    info = json.loads(body)
    assert status == 200 and info["default_entry"] == "forward"
    assert info["entry_points"]["forward"]["signature"] == str(server[2].signature)
    assert [i["name"] for i in info["entry_points"]["forward"]["inputs"]] == ["x", "y"]
    assert info["parameters"]["fc.weight"] == {"dtype": "float32", "shape": [3, 4]}


@pytest.mark.parametrize("body, status, message", [
    (b'{"inputs": ', 400, "not valid JSON"),
    (b'[1, 2]', 400, 'expected a JSON object {"inputs": [...]}'),
    (json.dumps({"inputs": [X.tolist()]}).encode(), 400, "forward() expects 2 inputs (x, y), got 1"),
    (json.dumps({"inputs": [X[:, :3].tolist(), Y.tolist()]}).encode(), 400, "dim 1 must be 4"),
    (json.dumps({"inputs": [{"dtype": "float64", "shape": [2, 4], "data": X.ravel().tolist()}, Y.tolist()]}).encode(),
     400, "expected dtype float32, got float64"),
    (json.dumps({"inputs": [{"dtype": "uint16", "shape": [1], "data": [1]}, Y.tolist()]}).encode(), 400,
     "unknown dtype 'uint16'"),
    (json.dumps({"inputs": [{"dtype": "float32", "shape": [3, 4], "data": [1]}, Y.tolist()]}).encode(), 400,
     "'data' holds 1 values, shape [3, 4] needs 12"),
    (json.dumps({"inputs": [[[1, 2], [3]], Y.tolist()]}).encode(), 400, "input 0: not an array of float32"),
    (json.dumps({"inputs": [[["a"] * 4], Y.tolist()]}).encode(), 400, "not an array of float32"),
    (b"\x93NUMPY\x01\x00garbage", 400, "not a valid .npy array"),
    (b"PK\x03\x04 not a zip", 400, "not a valid archive"),
])
def test_bad_requests_are_400_with_a_json_error(server, body, status, message):
    got_status, kind, reply = request(server, "POST", "/run", body)
    assert got_status == status and kind == "application/json"
    assert message in json.loads(reply)["error"]


def test_npz_with_other_names_and_pickled_npy_are_refused(server):
    buf = io.BytesIO()
    np.savez(buf, a=X, b=Y)
    status, _, reply = request(server, "POST", "/run", buf.getvalue())
    assert status == 400 and "expected the inputs named ['x', 'y']" in json.loads(reply)["error"]
    buf = io.BytesIO()
    np.save(buf, np.array([{}], dtype=object), allow_pickle=True)
    status, _, reply = request(server, "POST", "/run", buf.getvalue())
    assert status == 400 and "refusing to load pickled data" in json.loads(reply)["error"]


def test_size_limit_paths_methods_and_missing_length(server):
    status, _, reply = request(server, "POST", "/run", b"x" * 5000)
    assert status == 413 and "limit of 4096 (--max-request-bytes)" in json.loads(reply)["error"]
    assert request(server, "GET", "/nowhere")[0] == 404
    assert request(server, "GET", "/run")[0] == 405
    assert request(server, "PUT", "/run", b"{}")[0] == 405
    assert request(server, "POST", "/health", b"{}")[0] == 405
    status, _, reply = request(server, "POST", "/run/nope", b"{}")
    assert status == 404 and "no entry point 'nope'" in json.loads(reply)["error"]
    connection = http.client.HTTPConnection(*server[:2], timeout=60)
    connection.putrequest("POST", "/run")
    connection.endheaders()
    assert connection.getresponse().status == 411
    connection.close()


def test_concurrent_requests(server):
    model = server[2]
    results = []

    def client(k):
        x = X + k
        status, reply = post_json(server, {"inputs": [x.tolist(), Y.tolist()]})
        results.append((status, np.array(reply["outputs"][0]["data"], np.float32), model.run(x, Y)[0]))
    threads = [threading.Thread(target=client, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 8
    for status, got, expected in results:
        assert status == 200
        np.testing.assert_array_equal(got, expected)


def _ctrl_c_default() -> None:
    """In the server's process before Python starts: SIGINT as a terminal delivers it. A shell's background
    job starts with SIGINT ignored, and Python then never raises KeyboardInterrupt (the test would hang)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_the_command_serves_on_a_free_port_and_stops_on_ctrl_c(files):
    proc = subprocess.Popen([sys.executable, "-m", "tscript_runtime", "serve", "encoder.tsm", "--port", "0",
                             "--host", "127.0.0.1", "--entry", "encode", "--max-request-bytes", "100000"],
                            cwd=files, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=_ctrl_c_default)
    try:
        line = proc.stdout.readline()
        assert line.startswith("serving encoder.tsm on http://127.0.0.1:"), proc.stderr.read() if not line else line
        address = ("127.0.0.1", int(line.split("http://127.0.0.1:")[1].split()[0]))
        model = rt.load(files / "encoder.tsm")
        status, reply = post_json(address, {"inputs": [X.tolist()]})  # --entry: encode by default
        assert status == 200
        np.testing.assert_allclose(reply["outputs"][0]["data"], model.run_method("encode", X), rtol=1e-6)
        status, reply = post_json(address, {"inputs": [np.ones((2, 8)).tolist()]}, path="/run/decode")
        assert status == 200 and reply["outputs"][0]["shape"] == [2, 2]
        assert post_json(address, {"inputs": [[1.0]]})[0] == 400
        assert request(address, "POST", "/run", b"x" * 100001)[0] == 413
        assert request(address, "GET", "/health")[0] == 200
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            code = proc.wait(timeout=60)
        except subprocess.TimeoutExpired:  # say what the server was doing, and do not leave it running
            proc.kill()
            out, err = proc.communicate()
            pytest.fail(f"the server did not stop on Ctrl-C within 60 s; its output:\n{out}\n{err}")
        assert code == 0, proc.stderr.read()


def test_a_port_in_use_is_a_one_line_error(server, files, capsys, monkeypatch):
    from tscript_runtime.cli import main
    monkeypatch.chdir(files)
    assert main(["serve", "two.tsm", "--port", str(server[1])]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tsrt: error: ") and "in use" in err and err.count("\n") == 1
    assert main(["serve", "two.tsm", "--port", "70000"]) == 2
    assert main(["serve", "two.tsm", "--entry", "nope"]) == 2
    assert "no entry point 'nope'" in capsys.readouterr().err
