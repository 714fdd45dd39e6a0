"""Issue 22 in the app, pressed as a person would: a reply cut by the length limit
is shown truncated and ctrl+g continues it in place (Pilot, the scripted server in
its strict llama-cpp-python mode, LiteLLM's real client)."""

from __future__ import annotations

import threading
from functools import partial

import pytest

from chatui.core.config import Config
from chatui.llm.quirks import QUIRKS
from store import reply_state
from tests import llm_server as script
from widgets import MessageView

from .app_helpers import make_app, wait_until
from .test_app_chat import SIZE, chat_path, idle, type_and_send


@pytest.fixture
def config(llm_server, fake_key):
    QUIRKS.clear()
    llm_server.llama_cpp_python(n_ctx=100_000)
    return Config(model="openai/test-model", api_base=llm_server.base_url, max_retries=0)


async def test_a_truncated_reply_is_shown_so_and_ctrl_g_continues_it_in_place(
    store, config, llm_server
):
    llm_server.script(script.text("Roses are red, violets", finish_reason="length"))
    app = make_app(store, config)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await type_and_send(pilot, "A poem")
        await wait_until(
            pilot, lambda: bool(chat_path(app)) and reply_state(chat_path(app)[-1]) == "truncated"
        )
        await idle(pilot)
        reply = chat_path(app)[-1]
        view = app.main.chat_view.view_for(reply.id)
        await wait_until(pilot, lambda: view.has_class("-truncated"))
        assert "truncated" in view.header().plain
        notices = [str(n.render()) for n in app.main.query("ChatNotice")]
        assert any("ctrl+g" in n for n in notices), notices
        await pilot.press("up")
        assert isinstance(app.focused, MessageView) and app.focused.message.id == reply.id
        llm_server.script(script.text(" are blue."))
        await pilot.press("ctrl+g")
        await wait_until(pilot, lambda: chat_path(app)[-1].text.endswith("blue."))
        await idle(pilot)
        path = chat_path(app)
        assert [m.text for m in path] == ["A poem", "Roses are red, violets are blue."]
        assert path[-1].id == reply.id  # the same reply, not a sibling
        view = app.main.chat_view.view_for(reply.id)
        assert "truncated" not in view.header().plain
        assert view.shown == "Roses are red, violets are blue."


async def test_a_memory_write_on_a_server_that_breaks_off_tool_streams_lands_and_says_nothing_wrong(
    store, config, llm_server
):
    """Seen by hand with llama-cpp-python 0.3 and `chatml-function-calling`: asked to
    remember something, the app said *Cannot reach the endpoint* (the whole call after
    the empty stream went out on the connection the server had let go). Now the
    memory is written, the answer streams and no notice says anything failed."""
    llm_server.script(
        script.tool_calls(
            ("c1", "set_context", {"label": "memory", "content": "Ada", "action": "append"})
        ),
        script.text("I will remember, Ada."),
    )
    app = make_app(store, config)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await type_and_send(pilot, "Remember that my name is Ada.")
        await wait_until(
            pilot,
            lambda: bool(chat_path(app)) and chat_path(app)[-1].text == "I will remember, Ada.",
        )
        await idle(pilot)
        notices = [str(n.render()) for n in app.main.query("ChatNotice")]
        assert not any("Cannot reach" in n for n in notices), notices
        assert "Ada" in app.main.chat.session.get_context_block("memory").content
    assert llm_server.dropped == 1


async def test_a_tool_call_whose_arguments_look_like_markup_is_shown_as_written(
    store, config, llm_server
):
    """Seen by hand with SmolLM2: its set_context content began "[1. This chat…" beside
    a `metadata={ "descrip…` argument, and the tool's title, parsed as markup, crashed
    the app on showing the reply, and again on every start (the chat opens first)."""
    content = "[1. This chat has been…] [/] [bold red"
    llm_server.script(
        script.tool_calls(
            (
                "c1",
                "set_context",
                {"label": "memory", "content": content, "metadata": {"description": "x"}},
            )
        ),
        script.text("Done."),
    )
    for run in ("the reply", "a restart"):
        app = make_app(store, config)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            if run == "the reply":
                await type_and_send(pilot, "Remember this.")
            await wait_until(
                pilot, lambda app=app: bool(chat_path(app)) and chat_path(app)[-1].text == "Done."
            )
            await idle(pilot)
            titles = [
                str(t.render())
                for t in app.main.chat_view.query("CollapsibleTitle")
                if "set_context" in str(t.render())
            ]
            assert titles and "[1. This chat has been" in titles[0], titles


async def test_ctrl_g_on_a_complete_reply_says_why_not_and_sends_nothing(store, config, llm_server):
    llm_server.script(script.text("All of it."))
    app = make_app(store, config)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await type_and_send(pilot, "Hi")
        await wait_until(
            pilot, lambda: bool(chat_path(app)) and chat_path(app)[-1].text == "All of it."
        )
        await idle(pilot)
        sent = len(llm_server.requests)
        await pilot.press("up", "ctrl+g")
        await pilot.pause()
        assert len(llm_server.requests) == sent
        assert chat_path(app)[-1].text == "All of it."


async def test_the_model_picker_lists_what_the_server_serves_without_waiting(
    store, config, llm_server, monkeypatch
):
    """ctrl+l opens at once while the server is asked (slowly) for its models in the
    background; they join the open picker when the answer comes, under the filter
    typed meanwhile, marked as served there."""
    from textual.widgets import OptionList

    from chatui.llm.served import SERVED
    from chatui.tui.screens.model_picker import ModelPicker

    SERVED.clear()
    llm_server.model_ids = ("test-model", "qwen2.5-7b-instruct")
    answer = threading.Event()
    llm_server.info_gate = answer  # a slow server: the picker must not wait for it
    # It answers when the test says, however long a loaded machine takes to get there:
    # the background ask must not give up first.
    monkeypatch.setattr(SERVED, "refresh", partial(type(SERVED).refresh, SERVED, timeout=60))
    app = make_app(store, config)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("ctrl+l")
        await wait_until(pilot, lambda: isinstance(app.screen, ModelPicker))
        listed = app.screen.query_one("#models-list", OptionList)
        assert "qwen2.5-7b-instruct" not in [o.id for o in listed.options]  # nothing waited
        await pilot.press(*"qwen")
        assert [o.id for o in listed.options] == ["qwen"]  # nothing listed: offered as typed
        answer.set()
        await wait_until(pilot, lambda: listed.option_count > 1)
        assert [o.id for o in listed.options] == ["qwen2.5-7b-instruct", "qwen"]
        assert "served at" in str(listed.options[0].prompt)
        assert "as typed" in str(listed.options[1].prompt)
        # The row "as typed", highlighted while nothing else matched, gave way to the
        # model that came in: enter picks it.
        await pilot.press("enter")
        await wait_until(pilot, lambda: not isinstance(app.screen, ModelPicker))
        assert app.main.pane.model == "qwen2.5-7b-instruct"


async def test_the_model_picker_lists_hosted_models_whose_key_is_set(
    store, config, llm_server, monkeypatch
):
    """LiteLLM's table gives the hosted providers' chat models; only those whose key
    variable is set are listed (made in the background: the next ctrl+l shows them),
    named so LiteLLM routes them, and the key itself is never shown."""
    from textual.widgets import OptionList

    from chatui.llm.served import HOSTED
    from chatui.tui.screens.model_picker import ModelPicker

    HOSTED.clear()
    secret = "sk-ant-NEVER-SHOWN-0123456789"
    monkeypatch.setenv("ANTHROPIC_API_KEY", secret)
    monkeypatch.setenv("GEMINI_API_KEY", "gm-NEVER-SHOWN-0123456789")
    app = make_app(store, config)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.llm_ready)
        await pilot.press("ctrl+l")
        await wait_until(pilot, lambda: isinstance(app.screen, ModelPicker))
        await pilot.press("escape")
        await wait_until(pilot, lambda: bool(HOSTED.known()))
        await pilot.press("ctrl+l")
        await wait_until(pilot, lambda: isinstance(app.screen, ModelPicker))
        options = app.screen.query_one("#models-list", OptionList).options
        shown = {str(o.id): str(o.prompt) for o in options}
        claude = [m for m in shown if m.startswith("claude-")]
        assert claude and "ANTHROPIC_API_KEY is set" in shown[claude[0]]
        gemini = [m for m in shown if "gemini" in m and "GEMINI_API_KEY is set" in shown[m]]
        assert gemini and all(m.startswith("gemini/") for m in gemini)  # routed to Gemini
        assert "gpt-4o" in shown  # the fixture's OPENAI_API_KEY
        assert not [m for m in shown if m.startswith(("openrouter/", "mistral/"))]  # no key
        assert not any("NEVER-SHOWN" in text for text in shown.values())
        await pilot.press("escape")


def test_hosted_models_follow_the_keys_set_and_are_made_once_per_set():
    from chatui.llm.served import HostedModels

    hosted = HostedModels()
    assert hosted.refresh({"DEEPSEEK_API_KEY": "x"})
    models = hosted.known()
    assert models and {variable for _, variable in models} == {"DEEPSEEK_API_KEY"}
    assert "deepseek/deepseek-chat" in dict(models)  # named so LiteLLM routes it there
    assert not hosted.refresh({"DEEPSEEK_API_KEY": "another"})  # same providers: kept
    assert hosted.refresh({"DEEPSEEK_API_KEY": " "}) and hosted.known() == []  # blank: unset


async def test_the_sidebar_says_estimated_until_the_server_counted_then_exact(
    store, config, llm_server
):
    """A server with /tokenize that streams without usage (llama-cpp-python): before any
    reply the template's share is unknown and the sidebar says so; after the first
    reply the server is asked for its counts in the background, and when they come the
    sidebar, with nothing sent meanwhile, shows the server's count of the next request
    less the question (and says exact; it once stayed estimated until the next send).
    F2 shows the template's share."""
    from chatui.llm.template_cost import TEMPLATES
    from chatui.llm.tokens import TOKENS
    from chatui.tui.screens.prompt import PromptScreen

    TOKENS.clear()
    TEMPLATES.clear()
    llm_server.default = script.text("A short answer.")
    app = make_app(store, config)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        counted = app.main.sidebar.query_one("#counted")
        assert str(counted.render()) == "tokens estimated"
        await type_and_send(pilot, "Hello there.")
        await wait_until(pilot, lambda: len(chat_path(app)) == 2)
        await idle(pilot)
        await wait_until(pilot, lambda: "exact" in str(counted.render()))
        assert len(llm_server.requests) == 3  # the reply, and the two counts asked after
        assert str(counted.render()) == "tokens exact (server's count)"
        shown = app.main.sidebar.stats.tokens
        await pilot.press("f2")
        await wait_until(pilot, lambda: isinstance(app.screen, PromptScreen))
        title = str(app.screen.query_one("#prompt-title").render())
        assert "template " in title and f"whole request {shown:,} tokens" in title
        await pilot.press("escape")
        await type_and_send(pilot, "x")
        await wait_until(pilot, lambda: len(chat_path(app)) == 4)
        await idle(pilot)
    # The question "x" is one token and its message three (the toy ChatML's markers).
    assert shown + 1 + 3 == llm_server.prompt_tokens[-1]


async def picker_once_served(pilot, address: str) -> None:
    """ctrl+l (which asks `address` for its models in the background), escape, and
    ctrl+l again once the answer is in: the picker open with the served models."""
    from chatui.llm.served import SERVED
    from chatui.tui.screens.model_picker import ModelPicker

    app = pilot.app
    await pilot.pause()
    await pilot.press("ctrl+l")
    await wait_until(pilot, lambda: isinstance(app.screen, ModelPicker))
    await pilot.press("escape")
    await wait_until(pilot, lambda: bool(SERVED.known(address)))
    await pilot.press("ctrl+l")
    await wait_until(pilot, lambda: isinstance(app.screen, ModelPicker))


async def test_an_ollama_servers_models_are_listed_as_ollama_and_answer_there(
    store, llm_server, fake_key, monkeypatch
):
    """An Ollama server given by its root (`api_base = "http://127.0.0.1:11434"`): ctrl+l
    lists its models named for LiteLLM's Ollama provider, and the one picked answers
    through Ollama's own `/api/chat` (a bare name sent to that root asked for
    `/chat/completions`, which Ollama does not serve), tool calls included."""

    from chatui.llm.served import SERVED
    from chatui.tui.screens.model_picker import ModelPicker

    SERVED.clear()
    monkeypatch.setattr(SERVED, "refresh", partial(type(SERVED).refresh, SERVED, timeout=60))
    llm_server.ollama = True
    llm_server.model_ids = ("llama3.2:latest", "qwen2.5:7b")
    root = llm_server.base_url.removesuffix("/v1")
    config = Config(model="ollama_chat/llama3.2:latest", api_base=root, max_retries=0)
    app = make_app(store, config)
    async with app.run_test(size=SIZE) as pilot:
        await picker_once_served(pilot, root)
        assert SERVED.known(root) == ["ollama_chat/llama3.2:latest", "ollama_chat/qwen2.5:7b"]
        await pilot.press(*"qwen", "down", "enter")
        await wait_until(pilot, lambda: not isinstance(app.screen, ModelPicker))
        assert app.main.pane.model == "ollama_chat/qwen2.5:7b"

        llm_server.script(
            script.tool_calls(("call_1", "set_context", '{"label": "memory", "content": "Tea"}')),
            script.text("Noted: you like tea."),
        )
        await type_and_send(pilot, "Remember that I like tea")
        await idle(pilot)
        path = chat_path(app)
        assert path[-1].text == "Noted: you like tea."
        assert llm_server.request_paths == ["/api/chat", "/api/chat"]
        assert llm_server.requests[0]["model"] == "qwen2.5:7b"
        memory = [b for b in app.main.sidebar.blocks if b.label == "memory"]
        assert memory and memory[0].content == "Tea"


def test_served_lists_name_ollamas_models_only_at_its_root(llm_server):
    from chatui.llm.served import ServedModels

    served = ServedModels()
    llm_server.model_ids = ("smol",)
    assert served.refresh(llm_server.base_url)  # an OpenAI-compatible /v1: bare names
    assert served.known(llm_server.base_url) == ["smol"]
    root = llm_server.base_url.removesuffix("/v1")
    assert served.refresh(root)  # a root that is not Ollama's: its /v1/models, bare
    assert served.known(root) == ["smol"]
    llm_server.ollama = True
    assert served.refresh(root)
    assert served.known(root) == ["ollama_chat/smol"]
    assert not served.refresh(llm_server.base_url)  # Ollama's /v1: bare names, unchanged
    assert served.known(llm_server.base_url) == ["smol"]


async def test_a_local_ollama_needs_no_config(store, llm_server, fake_key, monkeypatch):
    """Ollama running where LiteLLM looks for it (`OLLAMA_API_BASE`, else its default
    port) and nothing configured: ctrl+l lists its models, the one picked answers
    there, and its window comes from Ollama's `/api/show`, as with an `api_base`."""
    from chatui.llm.served import SERVED
    from chatui.tui.screens.model_picker import ModelPicker

    SERVED.clear()
    monkeypatch.setattr(SERVED, "refresh", partial(type(SERVED).refresh, SERVED, timeout=60))
    llm_server.ollama = True
    llm_server.model_ids = ("gemma3:1b",)
    llm_server.ollama_show = {"model_info": {"gemma3.context_length": 32768}}
    root = llm_server.base_url.removesuffix("/v1")
    monkeypatch.setenv("OLLAMA_API_BASE", root)
    app = make_app(store, Config(model="demo", max_retries=0))
    async with app.run_test(size=SIZE) as pilot:
        await picker_once_served(pilot, root)
        shown = {str(o.id): str(o.prompt) for o in app.screen.query_one("#models-list").options}
        assert f"served by Ollama at {root}" in shown["ollama_chat/gemma3:1b"]
        await pilot.press(*"gemma", "down", "enter")
        await wait_until(pilot, lambda: not isinstance(app.screen, ModelPicker))
        llm_server.script(script.text("Hello from Ollama."))
        await type_and_send(pilot, "Hi")
        await idle(pilot)
        assert chat_path(app)[-1].text == "Hello from Ollama."
        assert llm_server.request_paths == ["/api/chat"]
        stats = lambda: app.main.sidebar.stats  # noqa: E731 - redrawn when the answer lands
        await wait_until(pilot, lambda: stats().window_source == "server")
        assert stats().window == 32768


async def test_what_answers_at_ollamas_address_but_is_not_ollama_is_not_listed(
    store, llm_server, fake_key, monkeypatch
):
    """Only Ollama's own list counts there: a bare name from another server's
    `/v1/models` would be sent to OpenAI, with the OpenAI key, when picked."""
    from chatui.llm.served import SERVED

    SERVED.clear()
    llm_server.model_ids = ("not-ollama",)
    root = llm_server.base_url.removesuffix("/v1")
    monkeypatch.setenv("OLLAMA_API_BASE", root)
    app = make_app(store, Config(model="demo", max_retries=0))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert SERVED.refresh(root)  # what the picker's background ask finds there
        assert SERVED.known(root) == ["not-ollama"]
        models = [m for m, _ in app.workspace.model_choices("demo", [])]
        assert "not-ollama" not in models and not [m for m in models if "ollama" in m]


def test_an_ollama_models_address_is_the_configs_else_ollamas_own(monkeypatch):
    from chatui.core.config import ModelOptions

    monkeypatch.delenv("OLLAMA_API_BASE", raising=False)
    bare = Config(model="demo")
    assert bare.options_for("ollama_chat/llama3.2").api_base == "http://localhost:11434"
    assert bare.options_for("ollama/llama3.2").api_base == "http://localhost:11434"
    assert bare.options_for("gpt-4o").api_base is None  # hosted: LiteLLM's provider's own
    monkeypatch.setenv("OLLAMA_API_BASE", "http://gpu-box:11434/")
    assert bare.options_for("ollama_chat/llama3.2").api_base == "http://gpu-box:11434"
    given = Config(
        model="demo",
        api_base="http://127.0.0.1:9999",
        models={"ollama_chat/big": ModelOptions(api_base="http://other:11434")},
    )
    assert given.options_for("ollama_chat/llama3.2").api_base == "http://127.0.0.1:9999"
    assert given.options_for("ollama_chat/big").api_base == "http://other:11434"


async def test_a_bad_ollama_address_says_where_it_looked(store, fake_key, monkeypatch):
    from chatui.llm.served import SERVED

    SERVED.clear()
    monkeypatch.setenv("OLLAMA_API_BASE", "not a url")
    assert not SERVED.refresh("not a url")  # the picker's background ask: nothing, no error
    app = make_app(store, Config(model="ollama_chat/llama3.2", max_retries=0))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await type_and_send(pilot, "hi")
        await idle(pilot)
        path = chat_path(app)
        assert [m.text for m in path[:1]] == ["hi"]  # the question is kept
        assert reply_state(path[-1]) == "error"
        notices = [str(n.render()) for n in app.main.query("ChatNotice")]
        assert any("Cannot reach" in n and "not a url" in n for n in notices), notices
