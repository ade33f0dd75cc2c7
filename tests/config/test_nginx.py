"""nginx.conf, the buffering proxy docker-compose.yml puts in front of gunicorn: its limits and
timeouts agree with the settings' defaults, docker-compose wires it as the only way in, and (where
an nginx binary is installed: .ci/run installs one) it runs for real in front of a real gunicorn.
"""

from __future__ import annotations

import re
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from django.conf import settings

from diagnosis.selectors import MAX_WAIT_SECONDS
from plumbing.serving import header_timeout

ROOT = Path(__file__).resolve().parents[2]
CONF = ROOT / "nginx.conf"
UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}


def _directive(name: str) -> str:
    """The value of a directive that the file sets once."""
    (value,) = re.findall(rf"^\s*{name}\s+([^;]+);", CONF.read_text(), flags=re.MULTILINE)
    return value.strip()


def _seconds(name: str) -> int:
    value = _directive(name)
    assert value.endswith("s"), f"{name} {value}: say the unit"
    return int(value[:-1])


def _bytes(name: str) -> int:
    number, unit = re.fullmatch(r"(\d+)([kmg]?)", _directive(name).lower()).groups()  # type: ignore[union-attr]
    return int(number) * UNITS[unit]


def test_the_body_limit_is_the_upload_limit_and_a_forms_fields() -> None:
    # Larger than the log limit (a form's other fields, JSON quoting), smaller than two logs.
    limit = _bytes("client_max_body_size")
    assert settings.ROOTCAUSE_MAX_LOG_BYTES < limit <= settings.DATA_UPLOAD_MAX_MEMORY_SIZE


def test_the_timeouts_agree_with_the_applications() -> None:
    assert _seconds("client_header_timeout") == header_timeout()
    assert _seconds("client_body_timeout") == settings.UPLOAD_IDLE_SECONDS
    # A long poll answers within MAX_WAIT_SECONDS; nginx waits for it a good while longer.
    assert _seconds("proxy_read_timeout") >= MAX_WAIT_SECONDS + 30
    # The upstream's kept-alive connections close before gunicorn's own keepalive does.
    gunicorn = (ROOT / "gunicorn.conf.py").read_text()
    (keepalive,) = re.findall(r"^keepalive = (\d+)", gunicorn, flags=re.MULTILINE)
    upstream = re.search(r"upstream web \{(.*?)\}", CONF.read_text(), flags=re.DOTALL)
    assert upstream is not None
    (upstream_keepalive,) = re.findall(r"keepalive_timeout\s+(\d+)s;", upstream.group(1))
    assert int(upstream_keepalive) < int(keepalive)


def test_bodies_are_buffered_in_the_tmpfs_never_on_a_disk() -> None:
    assert _directive("proxy_request_buffering") == "on"
    temp = _directive("client_body_temp_path")
    proxy = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]["proxy"]
    tmpfs = [v for v in proxy["volumes"] if isinstance(v, dict) and v["type"] == "tmpfs"]
    assert len(tmpfs) == 1
    assert temp.startswith(tmpfs[0]["target"] + "/")
    assert tmpfs[0]["tmpfs"]["size"] >= 2 * _bytes("client_max_body_size")


def test_compose_sends_everything_through_the_proxy() -> None:
    services = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
    assert "ports" not in services["web"]  # reached through the proxy only
    assert services["proxy"]["ports"] == ["8000:8080"]
    assert "./nginx.conf:/etc/nginx/nginx.conf:ro" in services["proxy"]["volumes"]
    assert re.search(r"^\s*listen 8080;", CONF.read_text(), flags=re.MULTILINE)
    assert re.search(r"server web:8000;", CONF.read_text())
    # The app counts the address the proxy appends, and no other.
    assert services["web"]["environment"]["TRUSTED_PROXY_COUNT"] == "1"
    assert _directive("proxy_set_header X-Forwarded-For") == "$proxy_add_x_forwarded_for"


# --- A real nginx in front of a real gunicorn -------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _local_conf(directory: Path, upstream_port: int, port: int, body_timeout: int) -> Path:
    """nginx.conf as it is, but for the addresses, paths and (shortened) body timeout of a test."""
    text = CONF.read_text()
    replacements = {
        "pid /run/nginx.pid;": f"pid {directory}/nginx.pid;",
        "server web:8000;": f"server 127.0.0.1:{upstream_port};",
        "listen 8080;": f"listen 127.0.0.1:{port};",
        "client_body_temp_path /var/cache/nginx/client_temp;": (
            f"client_body_temp_path {directory}/body; proxy_temp_path {directory}/proxy; "
            f"fastcgi_temp_path {directory}/f; uwsgi_temp_path {directory}/u; "
            f"scgi_temp_path {directory}/s;"
        ),
        "client_body_timeout 30s;": f"client_body_timeout {body_timeout}s;",
    }
    for old, new in replacements.items():
        assert old in text, old
        text = text.replace(old, new)
    path = directory / "nginx.conf"
    path.write_text(text)
    return path


@pytest.fixture
def proxied(tmp_path: Path, transactional_db: Any) -> Iterator[str]:
    from tests.e2e import stack
    from tests.worker import worker_environment

    binary = shutil.which("nginx")
    if binary is None:
        pytest.skip("no nginx binary (.ci/run installs Debian's nginx-light)")
    env = worker_environment(GUNICORN_WORKERS="1", TRUSTED_PROXY_COUNT="1")
    upstream = stack.free_port()
    web = stack.gunicorn(env, tmp_path / "web.log", upstream)
    web.start()
    port = _free_port()
    conf = _local_conf(tmp_path, upstream, port, body_timeout=2)
    check = subprocess.run([binary, "-t", "-c", str(conf)], capture_output=True, text=True)
    assert check.returncode == 0, check.stderr
    nginx = subprocess.Popen([binary, "-c", str(conf), "-g", "daemon off;"], cwd=tmp_path)
    try:
        stack.wait_until_serving(f"http://127.0.0.1:{upstream}", web)
        deadline = time.monotonic() + 20
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "nginx did not serve"
            time.sleep(0.1)
        yield f"http://127.0.0.1:{port}"
    finally:
        nginx.terminate()
        nginx.wait(timeout=10)
        web.stop()


@pytest.mark.e2e
def test_a_real_nginx_passes_submissions_and_answers_a_stalled_body_itself(
    proxied: str, acme_token: str
) -> None:
    auth = {"Authorization": f"Bearer {acme_token}", "Content-Type": "text/plain"}
    log = b"step 1 loss 2.0\nRuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
    submitted = httpx.post(f"{proxied}/api/v1/diagnoses", content=log, headers=auth, timeout=30)
    assert submitted.status_code == 202, submitted.text
    polled = httpx.get(
        f"{proxied}{submitted.headers['Location']}?wait=1",
        headers={"Authorization": auth["Authorization"]},
        timeout=30,
    )
    assert polled.status_code == 200

    # A body that stops coming never reaches gunicorn: nginx itself answers at its body timeout.
    host, port = proxied.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=20) as sock:
        sock.sendall(
            b"POST /api/v1/diagnoses HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\n"
            b"Content-Length: 100000\r\n\r\nstep 1 loss 2.0\n"
        )
        started = time.monotonic()
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    # nginx closes the connection at its body timeout (it logs a 408 and sends none).
    assert answer == b"" or answer.startswith(b"HTTP/1.1 408"), answer[:200]
    assert 1.5 < time.monotonic() - started < 10

    # Past the body limit: 413 from nginx, before a byte of the body is read.
    with socket.create_connection((host, int(port)), timeout=20) as sock:
        limit = _bytes("client_max_body_size")
        sock.sendall(
            b"POST /api/v1/diagnoses HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\n"
            + f"Content-Length: {limit + 1}\r\n\r\n".encode()
        )
        assert sock.recv(65536).startswith(b"HTTP/1.1 413")
