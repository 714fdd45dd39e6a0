"""Personas picked at ctrl+n and templates filled in a small form (issue 24), with real
keys, seen in the request LiteLLM's real client sends to the scripted server."""

from __future__ import annotations

import tomllib

import pytest

from chatui.core.config import parse_config
from chatui.core.workspace import ParamsError, UnknownPersona, Workspace
from chatui.tui.screens.persona_picker import PersonaPicker
from chatui.tui.screens.prompt import PromptScreen
from chatui.tui.screens.template_form import TemplateForm

from .app_helpers import make_app, notices, wait_until
from .test_app_chat import idle, type_and_send
from .test_app_palette import run_command

SIZE = (140, 40)

CONFIG = """
model = "openai/test-model"
max_retries = 1

[personas.pirate]
prompt = "You are a pirate. Answer in pirate speak."
model = "openai/pirate-model"
params = { temperature = 0.9, max_tokens = 99 }
tools = ["session_search"]
description = "Arr"

[personas.broken]
tools = ["no_such_tool"]

[templates.summary]
text = "Summarise {topic} in {n} bullet points, {{briefly}}."
description = "A short summary"

[templates.hello]
text = "Hello there."
"""


@pytest.fixture
def config(llm_server, fake_key):
    data = tomllib.loads(CONFIG)
    data["api_base"] = llm_server.base_url
    return parse_config(data)


def tool_names(request: dict) -> list[str]:
    return sorted(t["function"]["name"] for t in request.get("tools") or [])


async def test_ctrl_n_picks_a_persona_whose_prompt_model_params_and_tools_reach_the_request(
    store, config, llm_server
):
    app = make_app(store, config)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        main = app.main
        await pilot.press("ctrl+n")
        await wait_until(pilot, lambda: isinstance(app.screen, PersonaPicker))
        await pilot.press("down", "down", "enter")  # no persona, broken, pirate
        await wait_until(pilot, lambda: not isinstance(app.screen, PersonaPicker))
        await wait_until(pilot, lambda: main.pane.model == "openai/pirate-model")
        llm_server.text("Arr, ahoy.")
        await type_and_send(pilot, "Ahoy")
        await idle(pilot)
        sent = llm_server.last
        assert sent["model"] == "pirate-model"
        assert sent["temperature"] == 0.9 and sent["max_tokens"] == 99
        assert "You are a pirate." in sent["messages"][0]["content"]
        assert tool_names(sent) == ["session_search"]  # its tools only
        info = main.chat.info
        assert info.metadata["persona"] == "pirate"
        assert info.model == "openai/pirate-model"
        # F2 says so; the chat keeps all of it on the next turn.
        await pilot.press("f2")
        await wait_until(pilot, lambda: isinstance(app.screen, PromptScreen))
        assert "temperature = 0.9" in str(app.screen.query_one("#prompt-params").render())
        await pilot.press("escape")
        llm_server.text("Arr again.")
        await type_and_send(pilot, "More")
        await idle(pilot)
        assert llm_server.last["temperature"] == 0.9
        assert tool_names(llm_server.last) == ["session_search"]
        # No persona: the config's defaults (every tool, no parameters).
        await pilot.press("ctrl+n")
        await wait_until(pilot, lambda: isinstance(app.screen, PersonaPicker))
        await pilot.press("enter")
        await wait_until(pilot, lambda: not isinstance(app.screen, PersonaPicker))
        llm_server.text("Plain.")
        await type_and_send(pilot, "Plain question")
        await idle(pilot)
        assert llm_server.last["model"] == "test-model"
        assert "temperature" not in llm_server.last
        assert "You are a pirate." not in llm_server.last["messages"][0]["content"]
        assert len(tool_names(llm_server.last)) > 1


async def test_a_broken_persona_is_refused_with_the_reason_and_nothing_changes(
    store, config, llm_server
):
    app = make_app(store, config)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await pilot.pause()
        main = app.main
        llm_server.text("First.")
        await type_and_send(pilot, "Keep me")
        await idle(pilot)
        before = main.session_id
        await pilot.press("ctrl+n")
        await wait_until(pilot, lambda: isinstance(app.screen, PersonaPicker))
        await pilot.press("down", "enter")  # broken
        await wait_until(pilot, lambda: "unknown tool 'no_such_tool'" in notices(app))
        assert main.session_id == before  # still the chat that was open
        assert len(workspace_chats(app)) == 1


def workspace_chats(app):
    return app.workspace.list_chats()


async def test_a_template_is_filled_in_its_form_and_sent(store, config, llm_server):
    app = make_app(store, config)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        llm_server.text("First.")
        await type_and_send(pilot, "Start")
        await idle(pilot)
        await pilot.press(*"typed, not sent")  # the input is left alone
        await run_command(pilot, "Use template: summary")
        await wait_until(pilot, lambda: isinstance(app.screen, TemplateForm))
        await pilot.press(*"Lisbon", "enter")  # n is still empty: said, not sent
        hint = app.screen.query_one("#dialog-hint")
        await wait_until(pilot, lambda: "Fill in n first" in str(hint.render()))
        assert len(llm_server.requests) == 1
        llm_server.text("• one • two • three")
        await pilot.press("3", "enter")  # the field to fill has the focus
        await wait_until(pilot, lambda: not isinstance(app.screen, TemplateForm))
        await idle(pilot)
        sent = llm_server.last["messages"][-1]["content"]
        assert sent == "Summarise Lisbon in 3 bullet points, {briefly}."
        assert app.main.chat_input.text == "typed, not sent"
        # Escape sends nothing; a template without variables is sent at once.
        await run_command(pilot, "Use template: summary")
        await wait_until(pilot, lambda: isinstance(app.screen, TemplateForm))
        await pilot.press("escape")
        assert len(llm_server.requests) == 2
        llm_server.text("Hi.")
        await run_command(pilot, "Use template: hello")
        await idle(pilot)
        await wait_until(pilot, lambda: len(llm_server.requests) == 3)
        assert llm_server.last["messages"][-1]["content"] == "Hello there."


async def test_the_persona_functions_chatui_ask_uses(store, config, llm_server):
    """`check_persona` + `persona_model` + `create_chat(persona=...)`: what `chatui ask
    --persona NAME` calls; the turn is the app's."""
    workspace = Workspace(store, config)
    with pytest.raises(UnknownPersona, match=r"no persona 'pirat' \(personas: broken, pirate\)"):
        await workspace.check_persona("pirat")
    with pytest.raises(ParamsError, match="unknown tool 'no_such_tool'"):
        await workspace.check_persona("broken")
    persona = await workspace.check_persona("pirate")
    info = workspace.create_chat(
        "From the shell", model=workspace.persona_model(persona), persona=persona
    )
    llm_server.text("Arr.")
    workspace.start_reply(info.id, "send", text="Ahoy")
    await workspace.wait_for_replies(info.id)
    sent = llm_server.last
    assert sent["model"] == "pirate-model" and sent["temperature"] == 0.9
    assert "You are a pirate." in sent["messages"][0]["content"]
    assert tool_names(sent) == ["session_search"]


@pytest.mark.parametrize(
    ("toml", "problem"),
    [
        ("[personas.a]\nparams = { temperature = 3 }", "personas.a.params: temperature must be"),
        ("[personas.a]\nparams = { api_key = 'sk' }", "API keys come from the environment"),
        ("[personas.a]\ntools = 'all'", "personas.a.tools must be a list"),
        ("[personas.a]\nprompt = ''", "personas.a.prompt must not be empty"),
        ("[personas.a]\nvoice = 'x'", "unknown setting 'voice'"),
        ("[templates.t]\ntext = 'Hi {name'", "templates.t.text: "),
        ("[templates.t]\ntext = 'Hi {0}'", "{0} is not a variable"),
        ("[templates.t]\ntext = 'Hi {a.b}'", "{a.b} is not a variable"),
        ("[templates.t]\ntext = ''", "templates.t.text must not be empty"),
        ("keys = 3", "keys must be a table"),
    ],
)
def test_bad_personas_and_templates_in_the_config_are_named(toml, problem):
    with pytest.raises(ValueError, match=problem.replace("{", r"\{").replace(".", r"\.")):
        parse_config(tomllib.loads(toml))
