"""The broker's operator console in a real browser (headless Chromium driven by selenium).

Run by Tests/SystemTests/ConsoleSystemTests.swift against a whole system started by scripts/dev:

  1. opens CONSOLE_URL; the API asks for the operator token, the page shows its form; the test
     enters the token from CONSOLE_TOKEN_FILE;
  2. waits until every service of CONSOLE_SERVICES has a row, and each of its workers a version
     and health SERVING;
  3. once the tail is live, creates a timer with busctl (BUSCTL, with the bus settings of its
     environment) whose label is markup, and waits for the call (bus.rpc.timer-ticker.timers.create)
     and the event (timer.created) in the tail: the label shows as text, no element is made of it;
  4. filters the tail to bus.rpc.> and checks only calls remain;
  5. saves a screenshot to CONSOLE_SCREENSHOT.

Prints one line per step and exits 0 when all pass; on a failure it saves the screenshot anyway
and exits 1.
"""

import json
import os
import subprocess
import sys
import tempfile
import time

from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException, TimeoutException
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import WebDriverWait

URL = os.environ["CONSOLE_URL"]
TOKEN = open(os.environ["CONSOLE_TOKEN_FILE"]).read().strip()
SERVICES = [name for name in os.environ["CONSOLE_SERVICES"].split(",") if name]
BUSCTL = os.environ["BUSCTL"]
SCREENSHOT = os.environ["CONSOLE_SCREENSHOT"]
LABEL = '<img src=x onerror="window.pwned=1">console'


def step(text):
    print(text, flush=True)


def wait(driver, what, condition, seconds=30):
    # The console redraws its tables as news arrives; an element read during a redraw is stale,
    # which means "look again", not a failure.
    try:
        return WebDriverWait(driver, seconds, poll_frequency=0.2,
                             ignored_exceptions=(StaleElementReferenceException,)).until(lambda d: condition(d))
    except TimeoutException:
        raise AssertionError("timed out after %d s waiting for %s" % (seconds, what))


def browser(profile):
    options = Options()
    options.binary_location = os.environ.get("CHROMIUM", "/usr/bin/chromium")
    # --no-sandbox: CI runs as root, where Chromium's sandbox cannot start.
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                     "--window-size=1400,1200", "--user-data-dir=" + profile, "--no-first-run"):
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver")), options=options)
    driver.set_page_load_timeout(30)
    return driver


def service_ready(driver, name):
    """The service's row and, for each of its workers, a version and SERVING.

    Read in one script so that the rows come from a single rendering of the table."""
    instances = driver.execute_script("""
        const row = document.querySelector('#services tr.service[data-service="' + arguments[0] + '"]');
        if (!row) return null;
        const instances = [];
        for (let next = row.nextElementSibling; next && next.classList.contains('instance'); next = next.nextElementSibling)
            instances.push(Array.from(next.querySelectorAll('td'), cell => cell.innerText.trim()));
        return instances;""", name)
    return bool(instances) and all(cells[2] not in ("", "?") and cells[4] == "SERVING" for cells in instances)


def tail_subjects(driver):
    return driver.execute_script(
        "return Array.from(document.querySelectorAll('#tail tbody tr[data-subject]'), row => row.dataset.subject)")


def main():
    profile = tempfile.mkdtemp(prefix="console-chromium-")
    driver = browser(profile)
    try:
        driver.get(URL)
        wait(driver, "the token form (the API refused the page's first request)",
             lambda d: d.find_element(By.ID, "login").is_displayed())
        step("the console asks for the operator token")
        driver.find_element(By.ID, "token").send_keys(TOKEN)
        driver.find_element(By.CSS_SELECTOR, "#login button").click()

        for name in SERVICES:
            wait(driver, "service %s with every worker's version and SERVING" % name, lambda d: service_ready(d, name))
        step("every service is listed with its workers' versions, all SERVING: " + ", ".join(SERVICES))
        wait(driver, "the live tail", lambda d: d.find_element(By.ID, "tail-state").text == "live")

        call = subprocess.run(
            [BUSCTL, "call", "timer-ticker", "timers.create", '{"label": %s, "minutes": 5}' % json.dumps(LABEL), "--user", "console-user"],
            capture_output=True, text=True, timeout=30)
        assert call.returncode == 0, "busctl call failed (%d): %s %s" % (call.returncode, call.stdout, call.stderr)
        step("busctl created a timer")
        wait(driver, "the call and its event in the tail",
             lambda d: {"bus.rpc.timer-ticker.timers.create", "timer.created"} <= set(tail_subjects(d)))
        event = driver.find_element(By.CSS_SELECTOR, '#tail tbody tr[data-subject="timer.created"]')
        # The payload is shown as the JSON it is: the label with its quotes escaped.
        assert json.dumps(LABEL)[1:-1] in event.text, "the event's label is not shown as text: %r" % event.text
        assert not driver.find_elements(By.CSS_SELECTOR, "#tail img"), "the label became markup"
        assert driver.execute_script("return window.pwned === undefined"), "the label's script ran"
        assert "console-user" in event.text
        step("the call and the timer.created event appear in the tail, the markup in the label as text")

        topic = driver.find_element(By.ID, "topic")
        topic.send_keys("bus.rpc.>", Keys.ENTER)  # Enter makes the input's change event
        subprocess.run([BUSCTL, "call", "timer-ticker", "timers.list", "--user", "console-user"], capture_output=True, timeout=30)
        wait(driver, "only calls after filtering with bus.rpc.>",
             lambda d: tail_subjects(d) and all(s.startswith("bus.rpc.") for s in tail_subjects(d))
             and "bus.rpc.timer-ticker.timers.list" in tail_subjects(d))
        step("the topic filter bus.rpc.> leaves only calls")
        topic.send_keys(Keys.CONTROL, "a")
        topic.send_keys(Keys.BACKSPACE, Keys.ENTER)
        wait(driver, "the unfiltered tail again, from the console's buffer", lambda d: "timer.created" in tail_subjects(d))
    except Exception as error:  # the screenshot shows what the page looked like
        driver.save_screenshot(SCREENSHOT)
        print("FAILED: %s (screenshot %s)" % (error, SCREENSHOT), flush=True)
        driver.quit()
        sys.exit(1)
    driver.save_screenshot(SCREENSHOT)
    driver.quit()
    step("screenshot: " + SCREENSHOT)
    step("CONSOLE OK")


if __name__ == "__main__":
    started = time.time()
    main()
    step("took %.1f s" % (time.time() - started))
