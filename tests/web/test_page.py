"""The web page (openenv_gym/server/web.py, openenv_gym/server/static/), driven in a real
headless chromium through selenium on servers on 127.0.0.1.

With ``OPENENV_GYM_SCREENSHOTS=DIR`` the tests save the screenshots docs/web.md shows
into DIR (``OPENENV_GYM_SCREENSHOTS=docs python -m pytest tests/web`` makes them)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import openenv_gym
from tests.web.browser import chromium, require_browser, wait_until

REPORT = Path(__file__).resolve().parents[1] / "data" / "validation-cartpole.json"


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium(require_browser()) as driver:
        yield driver


def screenshot(driver: Any, name: str) -> None:
    folder = os.environ.get("OPENENV_GYM_SCREENSHOTS")
    if folder:
        driver.save_screenshot(str(Path(folder) / f"web-{name}.png"))


def element(driver: Any, css: str) -> Any:
    from selenium.webdriver.common.by import By

    return driver.find_element(By.CSS_SELECTOR, css)


def elements(driver: Any, css: str) -> list[Any]:
    from selenium.webdriver.common.by import By

    return driver.find_elements(By.CSS_SELECTOR, css)


def frames(driver: Any) -> int:
    return int(element(driver, "#frame").get_attribute("data-frames") or 0)


def pixels(driver: Any) -> str:
    return driver.execute_script("return document.getElementById('frame').toDataURL()")


def text_of(driver: Any, css: str) -> str:
    return driver.execute_script("return document.querySelector(arguments[0]).textContent", css)


def points(driver: Any) -> int:
    """The pixels of the returns plot in its colour (#2a7): 16 a point, an episode's return."""
    return driver.execute_script("""
        const canvas = document.getElementById("returns");
        const data = canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height).data;
        let n = 0;
        for (let i = 0; i < data.length; i += 4) if (data[i] === 34 && data[i + 1] === 170 && data[i + 2] === 119) n++;
        return n;""")


def open_page(driver: Any, url: str, name: str) -> None:
    driver.get(f"{url}/web/")
    wait_until(lambda: text_of(driver, "#name") == name, what=f"the page of {name}")


def reset(driver: Any) -> None:
    before = frames(driver)
    element(driver, "#reset").click()
    wait_until(lambda: text_of(driver, "#status") == "playing" and frames(driver) > before, what="the reset's frame")


def test_cartpole_shows_its_frame_and_a_click_changes_it(browser: Any) -> None:
    with openenv_gym.local_server("CartPole-v1", web=True) as url:
        open_page(browser, url, "CartPole-v1")
        labels = [button.text for button in elements(browser, "#controls button.action")]
        assert labels == ["left", "right"]
        assert "keep a pole balanced" in text_of(browser, "#instructions")
        element(browser, "#seed").send_keys("0")
        reset(browser)
        seeded = gym.make("CartPole-v1").reset(seed=0)[0]  # the seed reached the env
        values = [float(line.split(":")[1].split()[0]) for line in text_of(browser, "#text").splitlines()]
        assert values == pytest.approx(seeded.tolist(), abs=1e-3)
        assert element(browser, "#frame").is_displayed() and not element(browser, "#no-frame").is_displayed()
        first, shown = pixels(browser), frames(browser)
        for step in range(1, 4):
            element(browser, "#controls button.action[data-action='1']").click()
            wait_until(lambda step=step: text_of(browser, "#step") == str(step), what=f"step {step}")
        wait_until(lambda: frames(browser) >= shown + 3, what="the frames of the clicks")
        assert pixels(browser) != first
        assert "pole angle" in text_of(browser, "#text") and text_of(browser, "#return") == "3"
        screenshot(browser, "cartpole")


def test_keys_play_the_actions_they_name_and_the_returns_are_plotted(browser: Any) -> None:
    import re

    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    def velocity() -> float:
        return float(re.search(r"cart velocity: (\S+)", text_of(browser, "#text")).group(1))

    with openenv_gym.local_server("CartPole-v1", web=True) as url:
        open_page(browser, url, "CartPole-v1")
        reset(browser)
        browser.execute_script("document.activeElement.blur()")
        before = velocity()
        for step, key, push in ((1, Keys.ARROW_RIGHT, 1), (2, Keys.ARROW_LEFT, -1), (3, "1", 1)):  # 1: action 1, right
            ActionChains(browser).send_keys(key).perform()
            wait_until(lambda step=step: text_of(browser, "#stats #step") == str(step), what=f"the key of step {step}")
            after = velocity()
            assert (after - before) * push > 0.1, (key, before, after)  # a push changes the velocity by ~0.2
            before = after
        assert text_of(browser, "#episodes") == "0" and points(browser) == 0
        element(browser, "#run").click()
        wait_until(lambda: int(text_of(browser, "#episodes")) >= 3, what="three episodes of random actions")
        element(browser, "#run").click()
        assert "steps/s" in text_of(browser, "#fps")
        assert points(browser) >= 3 * 4  # a 4x4 point per episode at least (more of the line between them)


def test_an_action_mask_disables_buttons_and_keys(browser: Any) -> None:
    """Taxi says its legal moves in ``info["action_mask"]``; its arrows are compass points."""
    import time

    import httpx
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    with openenv_gym.local_server("Taxi-v4", web=True) as url:
        open_page(browser, url, "Taxi-v4")
        element(browser, "#seed").send_keys("0")
        reset(browser)
        mask = gym.make("Taxi-v4").reset(seed=0)[1]["action_mask"]
        buttons = {button.text: button for button in elements(browser, "#controls button.action")}
        assert list(buttons) == ["south", "north", "east", "west", "pickup", "dropoff"]
        assert [button.is_enabled() for button in buttons.values()] == [bool(m) for m in mask]
        assert mask[0] and not mask[2]  # seed 0: south is legal, east is not
        browser.execute_script("document.activeElement.blur()")
        ActionChains(browser).send_keys(Keys.ARROW_RIGHT).send_keys(Keys.ARROW_DOWN).perform()  # east, south
        wait_until(lambda: text_of(browser, "#stats #step") == "1", what="the legal key's step")
        time.sleep(0.5)  # long enough for a second step to show, had east been sent
        assert text_of(browser, "#stats #step") == "1"
        assert httpx.get(f"{url}/web/state").json()["step_count"] == 1


def test_tictactoe_plays_a_clicked_cell_and_the_opponent_answers(browser: Any) -> None:
    with openenv_gym.local_server("pettingzoo.classic.tictactoe_v3", web=True) as url:
        open_page(browser, url, "tictactoe_v3")
        seats = [option.text for option in elements(browser, "#seat option")]
        assert seats == ["player_1", "player_2"]
        reset(browser)
        cells = elements(browser, "#board button.cell")
        assert len(cells) == 9 and all(cell.text == "" for cell in cells)
        cells[4].click()
        wait_until(lambda: text_of(browser, "#step") == "1", what="the move")

        def marks() -> list[str]:
            return [cell.text for cell in elements(browser, "#board button.cell")]

        wait_until(lambda: marks().count("O") == 1, what="the opponent's answer")
        board = elements(browser, "#board button.cell")
        assert board[4].text == "X" and marks().count("X") == 1
        taken = [cell for cell in board if cell.text]
        assert all(not cell.is_enabled() for cell in taken)  # played cells are not legal
        assert sum(cell.is_enabled() for cell in board) == 7
        assert "Legal actions:" in text_of(browser, "#text")
        screenshot(browser, "tictactoe")


def test_pendulum_steps_when_its_slider_moves(browser: Any) -> None:
    from selenium.webdriver.common.keys import Keys

    with openenv_gym.local_server("Pendulum-v1", web=True) as url:
        open_page(browser, url, "Pendulum-v1")
        element(browser, "#seed").send_keys("0")  # a pendulum swinging enough to move a pixel in one step
        reset(browser)
        first = pixels(browser)
        slider = element(browser, "#controls input.slider")
        assert (slider.get_attribute("min"), slider.get_attribute("max")) == ("-2", "2")
        slider.send_keys(Keys.ARROW_RIGHT)
        wait_until(lambda: text_of(browser, "#stats #step") == "1", what="the slider's step")
        assert float(slider.get_attribute("value")) > 0
        wait_until(lambda: pixels(browser) != first, what="the new frame")
        assert float(text_of(browser, "#reward")) < 0  # Pendulum's cost
        step = element(browser, "#controls #step-button")
        assert step.text == "Step" and len(elements(browser, "[id=step]")) == 1  # the count is not written on it
        step.click()
        wait_until(lambda: text_of(browser, "#stats #step") == "2", what="the Step button's step")


def test_with_a_token_the_page_works_only_once_it_is_given(browser: Any) -> None:
    with openenv_gym.local_server("CartPole-v1", web=True, token="open sesame") as url:
        browser.delete_all_cookies()
        browser.get(f"{url}/web/")
        browser.execute_script("sessionStorage.clear()")
        browser.get(f"{url}/web/")
        wait_until(lambda: element(browser, "#token-form").is_displayed(), what="the token form")
        assert not element(browser, "#play").is_displayed()
        element(browser, "#token").send_keys("wrong")
        element(browser, "#token-form button").click()
        wait_until(lambda: "refused" in text_of(browser, "#token-error"), what="the refusal")
        assert not element(browser, "#play").is_displayed()
        field = element(browser, "#token")
        field.clear()
        field.send_keys("open sesame")
        element(browser, "#token-form button").click()
        wait_until(lambda: text_of(browser, "#name") == "CartPole-v1", what="the page after the token")
        reset(browser)  # the socket took the token from the page's cookie
        cookies = browser.execute_cdp_cmd("Network.getAllCookies", {})["cookies"]
        [cookie] = [cookie for cookie in cookies if cookie["name"] == "openenv_gym_token"]
        assert cookie["path"] == "/web/live" and cookie["sameSite"] == "Strict"  # sent to no other route
        element(browser, "#controls button.action[data-action='0']").click()
        wait_until(lambda: text_of(browser, "#step") == "1", what="a step with the token")
        browser.refresh()  # asked once: the tab keeps it
        wait_until(lambda: text_of(browser, "#name") == "CartPole-v1", what="the page, reloaded")
        assert not element(browser, "#token-form").is_displayed()
        wait_until(lambda: text_of(browser, "#stats #step") == "1", what="the episode, seen again with the token")
        element(browser, "#controls button.action[data-action='1']").click()
        wait_until(lambda: text_of(browser, "#stats #step") == "2", what="a step after the reload")
        browser.execute_script("sessionStorage.clear()")
        browser.execute_cdp_cmd("Network.clearBrowserCookies", {})  # all paths, not only the page's


def test_the_validation_tab_shows_the_report(browser: Any, tmp_path: Path) -> None:
    from openenv_gym.kit.report_html import report_html

    page = tmp_path / "report.html"  # as `openenv-gym check --html report.html` writes it
    page.write_text(report_html(json.loads(REPORT.read_text()), command="openenv-gym check wrappers/cartpole"))
    with openenv_gym.local_server("CartPole-v1", web=True, web_report=str(page)) as url:
        open_page(browser, url, "CartPole-v1")
        tab = element(browser, "#tab-validation")
        assert tab.is_displayed()
        tab.click()
        report = element(browser, "#report")
        wait_until(lambda: report.get_attribute("srcdoc"), what="the report")
        assert report.get_attribute("sandbox") == ""
        browser.switch_to.frame(report)
        try:
            rows = wait_until(lambda: elements(browser, "table tr"), what="the report's table")
            assert len(rows) > 5
            assert elements(browser, "svg")
        finally:
            browser.switch_to.default_content()
        screenshot(browser, "validation")


class Hostile(gym.Env):
    """<img src=x onerror="window.pwned = 1"> an env whose words are markup"""

    observation_space = gym.spaces.Discrete(3)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[int, dict]:
        super().reset(seed=seed)
        return 0, {}

    def step(self, action: Any) -> tuple[int, float, bool, bool, dict]:
        return 1, 1.0, False, False, {}

    def render_text(self) -> str:
        return '<script>window.pwned = 2</script><b id="bold">bold</b>'


def test_everything_the_env_writes_is_shown_as_text(browser: Any) -> None:
    with openenv_gym.local_server(Hostile, web=True) as url:
        browser.get(f"{url}/web/")
        wait_until(lambda: "onerror" in text_of(browser, "#description"), what="the description")
        element(browser, "#reset").click()
        wait_until(lambda: "<script>" in text_of(browser, "#text"), what="the text view")
        assert browser.execute_script("return window.pwned") is None
        assert not elements(browser, "#bold") and not elements(browser, "#description img")


def test_an_env_without_frames_says_how_to_get_them(browser: Any) -> None:
    with openenv_gym.local_server("CartPole-v1", web=True, env_kwargs={"render_mode": None}) as url:
        open_page(browser, url, "CartPole-v1")
        assert element(browser, "#no-frame").is_displayed()
        element(browser, "#reset").click()
        wait_until(lambda: text_of(browser, "#status") == "playing", what="the reset")
        assert not element(browser, "#frame").is_displayed()
        assert np.isfinite(float(text_of(browser, "#return")))
