#!/usr/bin/env python3
"""A real browser for tests/e2e/web.sh: headless Chromium (Debian's chromium + chromium-driver)
driven by Selenium, on a lab host other than the one serving.

  web_browser.py download URL DIR            every link on the page, into DIR; prints the names
  web_browser.py upload URL FILE...          the page's form with its script (progress shown)
  web_browser.py upload-nojs URL FILE        the same form with JavaScript turned off
  web_browser.py crosssite PAGE UPLOAD_URL   PAGE (on another origin) posts a form to UPLOAD_URL
                                             with fetch(no-cors); prints the status the browser saw
  web_browser.py screenshot URL OUT.png      the page at a phone's size, 390x844
  web_browser.py terminal TEXT OUT.png       TEXT (a command's stderr) as a terminal shows it
Prints one JSON object; exits non-zero when the browser did not do it.
"""
import json
import os
import sys
import time

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

WAIT = float(os.environ.get("WEB_BROWSER_WAIT", "180"))


def browser(download_dir=None, javascript=True, network_log=False):
    options = webdriver.ChromeOptions()
    if network_log:
        options.set_capability("goog:loggingPrefs", {"performance": "ALL"})
    options.binary_location = "/usr/bin/chromium"
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--no-first-run", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--disable-features=Translate,OptimizationHints,MediaRouter",
                 "--window-size=390,844", "--hide-scrollbars"):
        options.add_argument(flag)
    prefs = {"download.prompt_for_download": False, "safebrowsing.enabled": False}
    if download_dir:
        prefs["download.default_directory"] = download_dir
    if not javascript:
        prefs["profile.managed_default_content_settings.javascript"] = 2
    options.add_experimental_option("prefs", prefs)
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    driver.set_page_load_timeout(WAIT)
    if download_dir:
        driver.execute_cdp_cmd("Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": download_dir})
    return driver


def wait_until(predicate, what):
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise SystemExit(json.dumps({"error": f"timed out waiting for {what}"}))


def download(url, directory):
    os.makedirs(directory, exist_ok=True)
    driver = browser(download_dir=directory)
    try:
        driver.get(url)
        links = driver.find_elements(By.CSS_SELECTOR, "a[download]")
        names = [link.get_attribute("download") for link in links]
        for link in links:
            link.click()

        def done():
            present = os.listdir(directory)
            if any(name.endswith(".crdownload") for name in present):
                return False
            return all(name in present for name in names)
        wait_until(done, "the downloads")
        print(json.dumps({"downloaded": names, "title": driver.title}))
    finally:
        driver.quit()


def upload(url, files, javascript=True):
    driver = browser(javascript=javascript)
    try:
        driver.get(url)
        driver.find_element(By.ID, "files").send_keys("\n".join(os.path.abspath(f) for f in files))
        driver.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
        if javascript:
            text = wait_until(lambda: (driver.find_element(By.ID, "result").text or "").startswith(("Received", "Not")) and
                              driver.find_element(By.ID, "result").text, "the upload's answer")
        else:
            text = wait_until(lambda: driver.find_elements(By.CSS_SELECTOR, "#result.done, #result.failed") and
                              driver.find_element(By.ID, "result").text, "the answer page")
        print(json.dumps({"result": text, "title": driver.title}))
        if not text.startswith("Received"):
            sys.exit(1)
    finally:
        driver.quit()


def crosssite(page, upload_url):
    """The attack of issue 51: a page on another host that knows the URL posts a form to it. A
    no-cors answer is opaque to the page's script, so the status is read from the browser's own
    network log (DevTools' Network.responseReceived)."""
    driver = browser(network_log=True)
    try:
        driver.get(page + "#" + upload_url)
        title = wait_until(lambda: driver.title.startswith(("sent", "error")) and driver.title, "the page's fetch")
        statuses = []
        for entry in driver.get_log("performance"):
            message = json.loads(entry["message"])["message"]
            if message.get("method") == "Network.responseReceived":
                response = message["params"]["response"]
                if response.get("url") == upload_url:
                    statuses.append(response.get("status"))
        print(json.dumps({"title": title, "statuses": statuses}))
    finally:
        driver.quit()


def screenshot(url, out):
    driver = browser()
    try:
        driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                               {"width": 390, "height": 844, "deviceScaleFactor": 1, "mobile": True})
        driver.get(url)
        driver.save_screenshot(out)
        print(json.dumps({"screenshot": out, "title": driver.title}))
    finally:
        driver.quit()


def terminal(text_file, out):
    import html
    import tempfile
    text = open(text_file, encoding="utf-8").read()
    lines = text.rstrip("\n").split("\n")
    width = max(len(line) for line in lines)
    page = ("<!doctype html><meta charset=utf-8><body style='margin:0;background:#1e1e1e'>"
            "<pre style='margin:0;padding:12px;color:#e8e8e8;font:16px/1 \"DejaVu Sans Mono\",monospace'>"
            + html.escape(text) + "</pre>")
    with tempfile.NamedTemporaryFile("w", suffix=".html", delete=False, encoding="utf-8") as f:
        f.write(page)
    driver = browser()
    try:
        driver.set_window_size(max(width * 10 + 80, 500), len(lines) * 17 + 400)
        driver.get("file://" + f.name)
        element = driver.find_element(By.TAG_NAME, "pre")
        element.screenshot(out)
        print(json.dumps({"screenshot": out}))
    finally:
        driver.quit()
        os.unlink(f.name)


if __name__ == "__main__":
    mode, args = sys.argv[1], sys.argv[2:]
    if mode == "download":
        download(args[0], args[1])
    elif mode == "upload":
        upload(args[0], args[1:])
    elif mode == "upload-nojs":
        upload(args[0], args[1:], javascript=False)
    elif mode == "crosssite":
        crosssite(args[0], args[1])
    elif mode == "screenshot":
        screenshot(args[0], args[1])
    elif mode == "terminal":
        terminal(args[0], args[1])
    else:
        sys.exit(f"unknown mode {mode}")
