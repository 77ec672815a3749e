"""A summary notebook run cell by cell through a real Jupyter server, as JupyterLab would."""

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
import uuid

import nbformat
import pytest

from benchlib.inputs.params import NOTEBOOK_DIR

from .fakes import campaign

websocket = pytest.importorskip("websocket")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _request(url: str, token: str, method: str = "GET", body: dict | None = None) -> dict:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method,
                                     headers={"Authorization": f"token {token}"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read() or b"{}")


def _execute(ws, code: str, timeout: float = 120) -> list[dict]:
    msg_id = uuid.uuid4().hex
    ws.send(json.dumps({
        "header": {"msg_id": msg_id, "msg_type": "execute_request", "username": "test",
                   "session": uuid.uuid4().hex, "version": "5.3"},
        "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
        "content": {"code": code, "silent": False, "store_history": True,
                    "user_expressions": {}, "allow_stdin": False, "stop_on_error": True},
    }))
    replies, deadline = [], time.monotonic() + timeout
    while time.monotonic() < deadline:
        message = json.loads(ws.recv())
        if message.get("parent_header", {}).get("msg_id") != msg_id:
            continue
        replies.append(message)
        # shell and iopub are separate channels: the reply can come before the cell's last
        # output. The cell is done once the reply came and the kernel said it is idle again.
        kinds = {(m["msg_type"], m["content"].get("execution_state")) for m in replies}
        if ("execute_reply", None) in kinds and ("status", "idle") in kinds:
            return replies
    raise TimeoutError(code[:60])


@pytest.mark.slow
def test_summary_notebook_runs_through_a_jupyter_server(tmp_path):
    results = campaign(tmp_path / "fake")
    port, token = _free_port(), uuid.uuid4().hex
    server = subprocess.Popen(
        [sys.executable, "-m", "jupyter_server", "--no-browser", "--ip=127.0.0.1",
         f"--port={port}", f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={tmp_path}",
         "--allow-root"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ})
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(120):
            try:
                _request(f"{base}/api/status", token)
                break
            except OSError:
                time.sleep(0.25)
        kernel = _request(f"{base}/api/kernels", token, "POST", {"name": "python3"})
        ws = websocket.create_connection(
            f"ws://127.0.0.1:{port}/api/kernels/{kernel['id']}/channels?token={token}",
            timeout=120)
        nb = nbformat.read(NOTEBOOK_DIR / "summary_comparisons.ipynb", as_version=4)
        code = [c.source for c in nb.cells if c.cell_type == "code"]
        code[0] = f"results_dir = {str(results)!r}"  # the parameters cell, as a user would edit it
        outputs = []
        for source in code:
            replies = _execute(ws, source)
            reply = next(m for m in replies if m["msg_type"] == "execute_reply")["content"]
            assert reply["status"] == "ok", (source, reply.get("evalue"))
            outputs += [m for m in replies if m["msg_type"] in ("display_data", "execute_result")]
        ws.close()
        images = sum("image/png" in m["content"]["data"] for m in outputs)
        assert images == 2  # one ratio plot per comparison (dataset, batch size)
        assert any("synthetic vs real" in m["content"]["data"].get("text/plain", "")
                   for m in outputs)
        _request(f"{base}/api/kernels/{kernel['id']}", token, "DELETE")
    finally:
        server.terminate()
        server.wait(timeout=20)
