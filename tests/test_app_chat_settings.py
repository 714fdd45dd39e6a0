"""A chat's own system prompt and parameters (issue 24), edited with keys in the app and
seen in the request LiteLLM's real client sends to the scripted server."""

from __future__ import annotations

import pytest

from chatui.core.config import DEFAULT_SOUL, Config
from chatui.tui.screens.dialogs import TextPrompt
from chatui.tui.screens.prompt import PromptScreen
from widgets import MessageView

from .app_helpers import make_app, wait_until
from .test_app_chat import idle, type_and_send
from .test_app_palette import run_command

SIZE = (140, 40)


@pytest.fixture
def config(llm_server, fake_key):
    return Config(model="openai/test-model", api_base=llm_server.base_url, max_retries=1)


def system_text(request: dict) -> str:
    return request["messages"][0]["content"]


def hint(app) -> str:
    return str(app.screen.query_one("#dialog-hint").render())


async def test_parameters_set_in_f2_reach_the_request_and_bad_ones_are_refused(
    store, config, llm_server
):
    llm_server.text("First answer.")
    app = make_app(store, config)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await type_and_send(pilot, "Hello")
        await idle(pilot)
        first = llm_server.last
        assert "temperature" not in first and "max_tokens" not in first
        await pilot.press("f2")
        await wait_until(pilot, lambda: isinstance(app.screen, PromptScreen))
        assert "(none" in str(app.screen.query_one("#prompt-params").render())
        await pilot.press("p")
        await wait_until(pilot, lambda: isinstance(app.screen, TextPrompt))
        # Out of range: said in the dialog, which stays open with the text as typed.
        await pilot.press(*"temperature = 5", "enter")
        await wait_until(pilot, lambda: "temperature must be a number from 0 to 2" in hint(app))
        assert isinstance(app.screen, TextPrompt)
        field = app.screen.query_one("#dialog-input")
        # Typed where the example ends, on the line after its comments.
        assert field.text.endswith("# top_p = 0.9\ntemperature = 5")
        # A secret is never stored with a chat; a misspelt name gets a suggestion.
        await pilot.press("f7", *"api_key = 'sk-x'", "enter")
        await wait_until(pilot, lambda: "API keys come from the environment" in hint(app))
        await pilot.press("f7", *"temprature = 0.3", "enter")
        await wait_until(pilot, lambda: "did you mean temperature" in hint(app))
        await pilot.press("f7", *"temperature = ", "enter")
        await wait_until(pilot, lambda: "not `name = value` lines" in hint(app))
        assert app.main.chat.info.metadata.get("params") is None  # nothing was kept
        await pilot.press("f7", *"temperature = 0.2", "ctrl+j", *"max_tokens = 64")
        await pilot.press("ctrl+j", *"top_p = 0.5", "ctrl+j", *"seed = 7", "enter")
        await wait_until(pilot, lambda: not isinstance(app.screen, TextPrompt))
        stored = app.main.chat.info.metadata["params"]
        assert stored == {"temperature": 0.2, "max_tokens": 64, "top_p": 0.5, "seed": 7}
        # F2 shows them.
        await wait_until(pilot, lambda: app.main.pane.facts.params == stored)
        await pilot.press("f2")
        await wait_until(pilot, lambda: isinstance(app.screen, PromptScreen))
        shown = str(app.screen.query_one("#prompt-params").render())
        assert "temperature = 0.2" in shown and "max_tokens = 64" in shown
        await pilot.press("escape")
        llm_server.text("Second answer.")
        await type_and_send(pilot, "Again")
        await idle(pilot)
        sent = llm_server.last
        assert sent["temperature"] == 0.2
        assert sent["max_tokens"] == 64
        assert sent["top_p"] == 0.5
        assert sent["seed"] == 7
        assert sent["stream"] is True  # chatui's own settings are not overridden
        # A regenerate carries them too.
        llm_server.text("Third answer.")
        await pilot.press("up")
        assert isinstance(app.focused, MessageView)
        await pilot.press("ctrl+r")
        await idle(pilot)
        assert llm_server.last["temperature"] == 0.2
        # Cleared: no lines (a comment only) is the provider's defaults again.
        await run_command(pilot, "Chat parameters")
        await wait_until(pilot, lambda: isinstance(app.screen, TextPrompt))
        await pilot.press("f7", *"# none", "enter")
        await wait_until(pilot, lambda: not isinstance(app.screen, TextPrompt))
        assert "params" not in app.main.chat.info.metadata
    # Stored with the chat: a restart sends them again.
    app = make_app(store, config)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        llm_server.text("After restart.")
        await type_and_send(pilot, "Once more")
        await idle(pilot)
        assert "temperature" not in llm_server.last


async def test_the_system_prompt_edited_in_the_app_is_per_chat_and_per_branch(
    store, config, llm_server
):
    llm_server.text("First answer.")
    app = make_app(store, config)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await type_and_send(pilot, "Hello")
        await idle(pilot)
        llm_server.text("Second answer.")
        await type_and_send(pilot, "Second question")
        await idle(pilot)
        assert DEFAULT_SOUL in system_text(llm_server.last)
        await pilot.press("f2")
        await wait_until(pilot, lambda: isinstance(app.screen, PromptScreen))
        await pilot.press("e")
        await wait_until(pilot, lambda: isinstance(app.screen, TextPrompt))
        field = app.screen.query_one("#dialog-input")
        assert field.text == DEFAULT_SOUL  # the prompt in force, to rewrite
        # Empty: refused in the dialog, the old prompt kept.
        await pilot.press("f7", "space", "enter")
        await wait_until(pilot, lambda: "the system prompt is empty" in hint(app))
        await pilot.press("f7", *"You are a terse pirate.", "enter")
        await wait_until(pilot, lambda: not isinstance(app.screen, TextPrompt))
        await wait_until(pilot, lambda: "terse pirate" in app.main.pane.facts.request.system_prompt)
        # The reply on screen, regenerated: written with the new prompt.
        llm_server.text("Arr.")
        await pilot.press("up")
        await pilot.press("ctrl+r")
        await idle(pilot)
        system = system_text(llm_server.last)
        assert "You are a terse pirate." in system and DEFAULT_SOUL not in system
        # A branch split off before the question keeps the prompt it had: edit the
        # question into a sibling.
        views = app.main.chat_view.views
        question = next(v for v in reversed(views) if v.message.role == "user")
        question.focus()
        await pilot.press("e")
        await wait_until(pilot, lambda: isinstance(app.screen, TextPrompt))
        await pilot.press("f7", *"Another question", "enter")
        llm_server.text("Plain answer.")
        await wait_until(pilot, lambda: not isinstance(app.screen, TextPrompt))
        await idle(pilot)
        assert DEFAULT_SOUL in system_text(llm_server.last)
    # Another chat keeps the config's prompt.
    app = make_app(store, config)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("ctrl+n")
        await pilot.pause()
        llm_server.text("New chat answer.")
        await type_and_send(pilot, "Fresh")
        await idle(pilot)
        assert DEFAULT_SOUL in system_text(llm_server.last)


async def test_the_model_gets_no_tool_to_rewrite_the_prompt(store, config, llm_server):
    llm_server.text("Answer.")
    app = make_app(store, config)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await type_and_send(pilot, "Hello")
        await idle(pilot)
    tools = llm_server.last.get("tools") or []
    described = " ".join(str(t) for t in tools)
    assert "memory" in described  # its memory tools are offered ...
    assert "'soul'" not in described and '"soul"' not in described  # ... the soul is not
