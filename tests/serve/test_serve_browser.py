"""The web page in Debian's headless Chromium (Selenium driving /usr/bin/chromedriver, nothing
downloaded): the pipeline listed, its live MJPEG preview decoded, a source added through the form
with its counters moving, one removed with its button, the events list filled over SSE, text from
the API inserted as text, and the token traded for the session cookie (from the printed
``/?token=...`` address, which the page then drops, or typed in). Live sources are the oracle
ffmpeg on loopback; the service is the real one on a free port."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from serve_util import Camera, Served, source, wait_for
from spine_util import missing, need_module
from test_serve_events import events_chain

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
INSTALL = "Debian's chromium and its driver are not installed: apt-get install chromium chromium-driver"


class Page:
    """One Chromium tab on the service's page, and the few looks the tests take at it."""

    def __init__(self, driver: Any) -> None:
        from selenium.webdriver.common.by import By

        self.driver = driver
        self.by = By

    def css(self, selector: str) -> list[Any]:
        return list(self.driver.find_elements(self.by.CSS_SELECTOR, selector))

    def one(self, selector: str) -> Any:
        return wait_for(selector, lambda: (self.css(selector) or [None])[0])

    def field(self, pid: str, sid: str, name: str) -> str:
        found = self.css(f'[data-pipeline="{pid}"] [data-source="{sid}"] dd[data-field="{name}"]')
        return str(found[0].text) if found else ""

    def count(self, pid: str, sid: str, name: str) -> int:
        text = self.field(pid, sid, name)
        return int(text) if text.isdigit() else 0

    def decoded(self, pid: str, sid: str) -> bool:
        """Whether the source's preview image has decoded a picture."""
        imgs = self.css(f'[data-pipeline="{pid}"] [data-source="{sid}"] img.preview')
        width = self.driver.execute_script("return arguments[0].naturalWidth", imgs[0]) if imgs else 0
        return bool(width and width > 0)


@pytest.fixture
def page(tmp_path: Path) -> Iterator[Any]:
    """``page(url)``: headless Chromium on ``url``; the browser quits at the end of the test."""
    if not (os.access(CHROMIUM, os.X_OK) and os.access(CHROMEDRIVER, os.X_OK)):
        missing("tools", INSTALL)
    webdriver = need_module("selenium.webdriver", "the browser tests need selenium: pip install 'avdnn[test]'")
    from selenium.webdriver.chrome.service import Service

    os.environ.setdefault("SE_OFFLINE", "true")  # Selenium Manager is never asked for anything
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-background-networking",
        "--disable-extensions",
        "--no-first-run",
        f"--user-data-dir={tmp_path / 'chromium'}",
        "--window-size=1400,1000",
    ):
        options.add_argument(arg)
    drivers: list[Any] = []

    def open_page(url: str) -> Page:
        driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
        drivers.append(driver)
        driver.get(url)
        return Page(driver)

    yield open_page
    for driver in drivers:
        driver.quit()


def _pipeline(name: str, model: str, *cams: tuple[str, Camera]) -> dict[str, Any]:
    chain = events_chain(model) + ",drawbox=box_source=side_data_detection_bboxes:color=red"
    return {
        "name": name,
        "chain": chain,
        "output": ["-f", "null", "-"],
        "sources": [{"id": sid, "url": cam.url} for sid, cam in cams],
    }


def _samples(served: Served, pid: str, sid: str) -> int:
    r = served.client.get(f"/api/pipelines/{pid}/sources/{sid}/history")
    assert r.status_code == 200, r.text
    return len(r.json()["samples"])


def test_the_page_shows_adds_removes_and_streams(serve: Any, page: Any, ffmpeg: str, detector: str) -> None:
    served: Served = serve(retry_interval=30.0)
    with Camera(ffmpeg) as cam1, Camera(ffmpeg) as cam2:
        r = served.client.post("/api/pipelines", json=_pipeline("lobby", detector, ("cam1", cam1)))
        assert r.status_code == 201, r.text
        # the page opens once cam1 has run a few seconds: its chart starts with the service's samples
        wait_for("cam1 sampled 4 times", lambda: _samples(served, "lobby", "cam1") >= 4)
        before = _samples(served, "lobby", "cam1")
        p = page(f"{served.url}/?token={served.token}")  # as avdnn serve prints it
        chart = p.one('article[data-pipeline="lobby"] [data-source="cam1"] canvas.chart')
        points, loaded = int(chart.get_attribute("data-points")), int(chart.get_attribute("data-history"))
        assert loaded >= before and points > loaded  # drawn first with the history, then its own polls
        wait_for("cam1's preview decoded", lambda: p.decoded("lobby", "cam1"))
        wait_for("cam1's events over SSE", lambda: p.css('#events li[data-source="cam1"][data-type="new"]'))
        assert p.css('#events li[data-source="cam1"] .where')[0].text == "lobby/cam1"

        # a source added through the form shows up and its counters move
        p.one('#add-pipeline option[value="lobby"]')
        p.one("#add-id").send_keys("cam2")
        p.one("#add-url").send_keys(cam2.url)
        p.one('#add-source button[type="submit"]').click()
        p.one('[data-pipeline="lobby"] [data-source="cam2"]')
        wait_for("cam2 writing", lambda: p.count("lobby", "cam2", "written") > 0)
        first = p.count("lobby", "cam2", "written")
        wait_for("cam2's counters moving", lambda: p.count("lobby", "cam2", "written") > first)
        wait_for("cam2's preview decoded", lambda: p.decoded("lobby", "cam2"))
        assert source(served.status("lobby"), "cam2")["state"] == "running"
        assert p.css('[data-pipeline="lobby"] [data-source="cam2"] canvas.chart')

        # text from the API goes in as text: a URL with markup in it stays characters
        markup = "tcp://127.0.0.1:9/<b id=injected>x</b>"
        p.one("#add-id").send_keys("odd")
        p.one("#add-url").send_keys(markup)
        p.one('#add-source button[type="submit"]').click()
        shown = p.one('[data-pipeline="lobby"] [data-source="odd"] .url')
        assert shown.text == markup and not p.css("#injected")

        # removing through the button removes it (from the page and from the pipeline)
        p.one('[data-pipeline="lobby"] [data-source="odd"] button.remove').click()
        wait_for("odd gone from the page", lambda: not p.css('[data-pipeline="lobby"] [data-source="odd"]'))
        gone = source(served.status("lobby"), "odd")
        assert gone["departed"] and gone["state"] == "ended"
        p.one('[data-pipeline="lobby"] [data-source="cam2"] button.remove').click()
        wait_for("cam2 gone from the page", lambda: not p.css('[data-pipeline="lobby"] [data-source="cam2"]'))
        assert source(served.status("lobby"), "cam2")["departed"]
        assert p.css('[data-pipeline="lobby"] [data-source="cam1"]')  # the other one stays
        wait_for("cam2's end event listed", lambda: p.css('#events li[data-source="cam2"][data-type="end"]'))
        errors = [e for e in p.driver.get_log("browser") if e["level"] == "SEVERE" and "favicon" not in e["message"]]
        assert errors == [], errors
        assert p.driver.current_url == served.url + "/"  # the token left the address bar (and the history)
        assert served.token not in p.driver.execute_script("return document.documentElement.outerHTML")


def test_the_page_signs_in_with_the_token(serve: Any, page: Any, ffmpeg: str) -> None:
    """With --token: the page asks for it, trades it for the HttpOnly cookie, and then its fetches,
    its MJPEG <img> and its EventSource all pass the gate (none of them can carry the header)."""
    served: Served = serve(token="s3cret-t0ken")
    with Camera(ffmpeg) as cam:
        body = {
            "name": "door",
            "chain": "hflip",
            "output": ["-f", "null", "-"],
            "sources": [{"id": "cam", "url": cam.url}],
        }
        assert served.client.post("/api/pipelines", json=body).status_code == 201
        p = page(served.url + "/?token=n0t-the-t0ken")  # a wrong token in the address: dropped, then asked for
        wait_for("the token asked for", lambda: p.one("#login").is_displayed())
        assert p.one("#login-error").text == "the token in the address is not this service's"
        assert p.driver.current_url == served.url + "/"
        p.one("#login-token").send_keys("wrong")
        p.one('#login button[type="submit"]').click()
        wait_for("a wrong token refused", lambda: p.one("#login-error").text == "wrong token")
        p.one("#login-token").clear()
        p.one("#login-token").send_keys("s3cret-t0ken")
        p.one('#login button[type="submit"]').click()
        p.one('article[data-pipeline="door"] [data-source="cam"]')
        wait_for("the preview through the cookie", lambda: p.decoded("door", "cam"))
        assert not p.one("#login").is_displayed()
        assert p.driver.execute_script("return document.cookie") == ""  # HttpOnly: no script reads it
        cookie = p.driver.get_cookie("avdnn_session")
        assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and "s3cret-t0ken" not in cookie["value"]
        # the EventSource opened after the sign-in, through the cookie (a refused one is CLOSED, 2)
        wait_for("the event stream open", lambda: p.driver.execute_script("return events && events.readyState") == 1)
