"""``rescue data fetch`` against a real HTTP server on 127.0.0.1, and offline (a closed loopback port)."""

from __future__ import annotations

import functools
import http.server
import socket
import threading
from pathlib import Path

import pytest

from rescue_bench.data.fetch import RELEASE_FILENAME, FetchError, cached_release, default_cache_dir, fetch_release
from tests.factories import release_clip, write_lines

pytestmark = pytest.mark.slow  # the quick lane (-m 'not slow') leaves these end-to-end tests out


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep test output clean
        pass


@pytest.fixture
def server(tmp_path):
    """Serve ``tmp_path/www`` over HTTP on 127.0.0.1; yields (base_url, folder, stop)."""
    www = tmp_path / "www"
    www.mkdir()
    handler = functools.partial(_QuietHandler, directory=str(www))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    stopped = False

    def stop():
        nonlocal stopped
        if not stopped:
            httpd.shutdown()
            httpd.server_close()
            stopped = True

    yield f"http://127.0.0.1:{httpd.server_address[1]}", www, stop
    stop()
    thread.join(timeout=5)


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def one_line_error(result) -> str:
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    return lines[0]


def test_fetch_downloads_validates_and_prints_the_path(server, tmp_path, invoke):
    base, www, stop = server
    served = write_lines(www / "release.jsonl", [release_clip("a/1"), release_clip("a/2", "family", 3)])
    cache = tmp_path / "cache"
    result = invoke("data", "fetch", "--url", f"{base}/release.jsonl", "--cache-dir", cache)
    assert result.exit_code == 0, result.output
    path = Path(result.stdout.strip())
    assert path == cache / RELEASE_FILENAME
    assert path.read_bytes() == served.read_bytes()
    assert "2 clips, 5 rows" in result.stderr
    assert sorted(p.name for p in cache.iterdir()) == [RELEASE_FILENAME, "fetched.json"]  # no temp files left
    assert cached_release(cache) == path

    # a valid cached copy is reused without the network
    stop()
    again = invoke("data", "fetch", "--url", f"{base}/release.jsonl", "--cache-dir", cache)
    assert again.exit_code == 0 and Path(again.stdout.strip()) == path and "cached copy" in again.stderr

    # --force needs the network; failing leaves the cached copy intact
    forced = invoke("data", "fetch", "--url", f"{base}/release.jsonl", "--cache-dir", cache, "--force")
    assert "--data" in one_line_error(forced)
    assert path.read_bytes() == served.read_bytes()
    # the fetched file is usable as input everywhere
    assert invoke("data", "validate", path).exit_code == 0


def test_offline_gives_one_line_with_the_local_copy_hint(tmp_path, invoke):
    cache = tmp_path / "cache"
    result = invoke("data", "fetch", "--url", f"http://127.0.0.1:{closed_port()}/x.jsonl", "--cache-dir", cache,
                    "--timeout", "5")
    line = one_line_error(result)
    assert "could not download" in line and "--data" in line and RELEASE_FILENAME in line
    assert not (cache / RELEASE_FILENAME).exists()
    assert not list(cache.glob(".*"))  # nothing half-written


def test_http_error_is_one_line(server, tmp_path, invoke):
    base, _, _ = server
    line = one_line_error(invoke("data", "fetch", "--url", f"{base}/missing.jsonl", "--cache-dir", tmp_path / "c"))
    assert "HTTP 404" in line


def test_invalid_download_is_not_saved(server, tmp_path, invoke):
    base, www, _ = server
    (www / "page.html").write_text("<html>not the release</html>\n", encoding="utf-8")
    cache = tmp_path / "cache"
    line = one_line_error(invoke("data", "fetch", "--url", f"{base}/page.html", "--cache-dir", cache))
    assert "not a valid release" in line
    assert list(cache.iterdir()) == []


def test_invalid_cached_copy_is_replaced(server, tmp_path):
    base, www, _ = server
    write_lines(www / "release.jsonl", [release_clip("a/1")])
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / RELEASE_FILENAME).write_text("garbage\n", encoding="utf-8")
    result = fetch_release(url=f"{base}/release.jsonl", cache_dir=cache)
    assert result.downloaded and result.clips == 1


def test_unknown_source_and_bad_url(invoke, tmp_path):
    assert "unknown --source" in one_line_error(invoke("data", "fetch", "--source", "ftp", "--cache-dir", tmp_path))
    assert "could not download" in one_line_error(invoke("data", "fetch", "--url", "not a url", "--cache-dir", tmp_path))
    with pytest.raises(FetchError):
        fetch_release("nowhere", tmp_path)


def test_default_cache_dir(monkeypatch, tmp_path):
    assert default_cache_dir({"RESCUE_DATA_DIR": str(tmp_path)}) == tmp_path
    assert default_cache_dir({}) == Path.home() / ".cache" / "rescue-bench"
    # the XDG base directory specification's user cache, unless RESCUE_DATA_DIR says otherwise
    assert default_cache_dir({"XDG_CACHE_HOME": str(tmp_path / "xdg")}) == tmp_path / "xdg" / "rescue-bench"
    assert default_cache_dir({"XDG_CACHE_HOME": "relative/ignored"}) == Path.home() / ".cache" / "rescue-bench"
    assert default_cache_dir({"XDG_CACHE_HOME": str(tmp_path / "xdg"), "RESCUE_DATA_DIR": str(tmp_path)}) == tmp_path
    monkeypatch.setenv("RESCUE_DATA_DIR", str(tmp_path / "env"))
    assert default_cache_dir() == tmp_path / "env"
    assert cached_release() is None


# -- revisions of the Hugging Face dataset, pinned by default, their sha256 recorded -------------------


def _hub(www: Path, revision: str, clips: list) -> Path:
    """The release file where the hub serves the dataset at ``revision``."""
    folder = www / "datasets" / "tomhu" / "relation_therapy" / "resolve" / revision
    folder.mkdir(parents=True)
    return write_lines(folder / RELEASE_FILENAME, clips)


def test_fetch_takes_a_revision_records_its_sha256_and_caches_under_xdg(server, tmp_path, invoke, monkeypatch):
    import hashlib
    import json

    from rescue_bench.data.fetch import PINNED_REVISION

    base, www, stop = server
    old = _hub(www, "abc123", [release_clip("a/1")])
    pinned = _hub(www, PINNED_REVISION["hf"], [release_clip("a/1"), release_clip("a/2")])
    monkeypatch.setenv("HF_ENDPOINT", base)  # the loopback server stands in for the hub
    monkeypatch.delenv("RESCUE_DATA_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    result = invoke("data", "fetch", "--revision", "abc123")
    assert result.exit_code == 0, result.output
    path = Path(result.stdout.strip())
    assert path == tmp_path / "xdg" / "rescue-bench" / "hf" / "abc123" / RELEASE_FILENAME
    assert path.read_bytes() == old.read_bytes()
    digest = hashlib.sha256(old.read_bytes()).hexdigest()
    assert "(revision abc123): 1 clips" in result.stderr and f"sha256 {digest}" in result.stderr
    meta = json.loads((path.parent / "fetched.json").read_text())
    assert (meta["revision"], meta["sha256"], meta["source"]) == ("abc123", digest, "hf")
    # without --revision: the pinned one, in a folder of its own
    default = invoke("data", "fetch")
    assert default.exit_code == 0, default.output
    assert Path(default.stdout.strip()).read_bytes() == pinned.read_bytes()
    assert Path(default.stdout.strip()).parent.name == PINNED_REVISION["hf"]
    # a cached copy whose bytes are no longer the ones recorded is not reused
    path.write_bytes(path.read_bytes().replace(b"a/1", b"a/9"))
    again = invoke("data", "fetch", "--revision", "abc123")
    assert again.exit_code == 0 and "downloaded from" in again.stderr and path.read_bytes() == old.read_bytes()
    # --sha256 pins the content: other bytes are refused, nothing saved
    wrong = invoke("data", "fetch", "--revision", "abc123", "--sha256", "0" * 64, "--force")
    assert "has sha256" in one_line_error(wrong) and path.read_bytes() == old.read_bytes()
    stop()
    offline = invoke("data", "fetch", "--revision", "abc123", "--sha256", digest)
    assert offline.exit_code == 0 and "cached copy reused" in offline.stderr


def test_data_takes_a_revision_of_the_hugging_face_dataset(server, tmp_path, invoke, monkeypatch):
    base, www, stop = server
    _hub(www, "v2", [release_clip("a/1"), release_clip("a/2", "family", 3)])
    monkeypatch.setenv("HF_ENDPOINT", base)
    monkeypatch.setenv("RESCUE_DATA_DIR", str(tmp_path / "cache"))
    validated = invoke("data", "validate", "hf:tomhu/relation_therapy@v2")
    assert validated.exit_code == 0 and "2 clips" in validated.stdout, validated.output
    stop()  # then from the cache
    built = invoke("tasks", "build", "--data", "hf:tomhu/relation_therapy@v2", "--out", str(tmp_path / "tasks"))
    assert built.exit_code == 0, built.output
    assert (tmp_path / "cache" / "hf" / "v2" / RELEASE_FILENAME).is_file()
    bad = invoke("tasks", "build", "--data", "hf:relation_therapy", "--out", str(tmp_path / "t2"))
    assert "hf:OWNER/NAME" in one_line_error(bad)
