"""`TokenGauge`: one labelled bar of tokens used against a budget."""

from __future__ import annotations

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.message import Message as TextualMessage
from textual.reactive import reactive
from textual.strip import Strip
from textual.widget import Widget

__all__ = ["TokenGauge", "format_tokens", "fill_level"]

WARN_AT = 0.75
OVER_AT = 0.95


def format_tokens(n: int | None) -> str:
    """12 → "12", 12_345 → "12.3k", 128_000 → "128k", 1_048_576 → "1.05M"."""
    if n is None:
        return "?"
    if n < 1000:
        return str(n)
    if n < 100_000:
        return f"{n / 1000:.1f}".removesuffix(".0") + "k"
    if n < 1_000_000:
        return f"{n / 1000:.0f}k"
    return f"{n / 1_000_000:.2f}".rstrip("0").rstrip(".") + "M"


def fill_level(used: int, limit: int | None) -> str:
    """The gauge's state class: -ok, -warn, -over, or -unbounded without a limit."""
    if not limit:
        return "-unbounded"
    share = used / limit
    if share >= OVER_AT:
        return "-over"
    return "-warn" if share >= WARN_AT else "-ok"


class TokenGauge(Widget, can_focus=True):
    """A label, a kind tag, `used/limit` and a bar coloured by how full it is.

    The fill state shows as one of the CSS classes `-ok`, `-warn`, `-over`,
    `-unbounded`, so themes colour it.
    """

    DEFAULT_CSS = """
    TokenGauge {
        height: 2;
        width: 1fr;
        margin-bottom: 1;
    }
    TokenGauge > .token-gauge--label { text-style: bold; }
    TokenGauge > .token-gauge--kind { color: $text-muted; }
    TokenGauge > .token-gauge--figure { color: $text-muted; }
    TokenGauge > .token-gauge--bar { color: $success; }
    TokenGauge.-warn > .token-gauge--bar { color: $warning; }
    TokenGauge.-over > .token-gauge--bar { color: $error; }
    TokenGauge.-unbounded > .token-gauge--bar { color: $primary 60%; }
    TokenGauge > .token-gauge--empty { color: $foreground 15%; }
    TokenGauge:focus { background: $foreground 8%; }
    TokenGauge:focus > .token-gauge--label { color: $accent; text-style: bold underline; }
    """

    BINDINGS = [Binding("enter", "open", "Open", id="gauge.open")]

    class Opened(TextualMessage):
        """The user asked to see what the gauge measures (enter or a click)."""

        def __init__(self, gauge: TokenGauge) -> None:
            super().__init__()
            self.gauge = gauge

        @property
        def label(self) -> str:
            return self.gauge.label

    COMPONENT_CLASSES = {
        "token-gauge--label",
        "token-gauge--kind",
        "token-gauge--figure",
        "token-gauge--bar",
        "token-gauge--empty",
    }

    label: reactive[str] = reactive("")
    """What the gauge measures (a block label, "conversation")."""
    kind: reactive[str] = reactive("")
    """A short tag shown after the label (writable, readonly, …); empty for none."""
    used: reactive[int] = reactive(0)
    """Tokens in use."""
    limit: reactive[int | None] = reactive(None)
    """The budget; None draws an unbounded gauge (no bar fill, just the count)."""
    figure: reactive[str] = reactive("")
    """Overrides the right-hand text (e.g. "12.3k of 128k")."""

    def __init__(
        self,
        label: str = "",
        used: int = 0,
        limit: int | None = None,
        kind: str = "",
        *,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.set_reactive(TokenGauge.label, label)
        self.set_reactive(TokenGauge.kind, kind)
        self.set_reactive(TokenGauge.used, used)
        self.set_reactive(TokenGauge.limit, limit)
        self._lines_cache: tuple[tuple[object, ...], tuple[Strip, Strip] | None] | None = None
        self._update_level()

    def on_mount(self) -> None:
        self._update_level()

    def action_open(self) -> None:
        self.post_message(self.Opened(self))

    def on_click(self, event: events.Click) -> None:
        self.action_open()

    def watch_used(self) -> None:
        self._update_level()

    def watch_limit(self) -> None:
        self._update_level()

    def _update_level(self) -> None:
        level = fill_level(self.used, self.limit)
        # Not in the DOM yet, the classes are read when the gauge is styled as it is
        # mounted: a restyle of its own now would style it twice (at start-up, a sidebar
        # of new gauges).
        names = ("-ok", "-warn", "-over", "-unbounded")
        if all(self.has_class(name) == (name == level) for name in names):
            return
        for name in names:
            self.set_class(name == level, name, update=False)
        if self.is_attached:  # one restyle for the change (one a class, at start-up two)
            self.update_node_styles()

    @property
    def share(self) -> float | None:
        return self.used / self.limit if self.limit else None

    def figure_text(self) -> str:
        if self.figure:
            return self.figure
        if self.limit:
            return f"{self.used:,}/{self.limit:,}"
        return f"{format_tokens(self.used)} tok"

    def render_line(self, y: int) -> Strip:
        """The gauge's two lines as strips, without its `Text` (`render`) and Textual's
        content pipeline (wrapping, style conversion, ~4.6 M instructions a gauge at
        start-up: issue 23): the same cells and styles. Where the head would not fit
        the width as it is (a gauge under 10 columns, a figure or label too wide: the
        head is cut, or wrapped onto the bar's line) or text is selected, Textual
        draws `render()` as before."""
        lines = self._lines() if y < 2 and self.text_selection is None else None
        return super().render_line(y) if lines is None else lines[y]

    def _lines(self) -> tuple[Strip, Strip] | None:
        width = self.content_size.width
        label, kind, figure = self.label, self.kind, self.figure_text()
        style = self.get_component_rich_style
        names = ("token-gauge--label", "token-gauge--kind", "token-gauge--figure")
        styles = (*map(style, names), style("token-gauge--bar"), style("token-gauge--empty"))
        base = self.visual_style.rich_style
        key = (width, label, kind, figure, self.used, self.limit, styles, base)
        if self._lines_cache is not None and self._lines_cache[0] == key:
            return self._lines_cache[1]
        lines = self._draw_lines(width, label, kind, figure, styles, base)
        self._lines_cache = (key, lines)
        return lines

    def _draw_lines(
        self,
        width: int,
        label: str,
        kind: str,
        figure: str,
        styles: tuple[Style, ...],
        base: Style,
    ) -> tuple[Strip, Strip] | None:
        if width < 10 or not (label + kind + figure).isprintable():
            return None
        label_style, kind_style, figure_style, bar_style, empty_style = styles
        head = cell_len(label) + (cell_len(kind) + 1 if kind else 0)
        gap = width - head - len(figure)  # as `render` counts it
        if gap < 1 and figure.endswith(")") and " (" in figure:
            figure = figure[: figure.rindex(" (")]
            gap = width - head - len(figure)
        if gap < 1 or head + gap + cell_len(figure) != width:
            return None  # cut with an ellipsis, or wider than the gauge
        segments = [Segment(label, label_style)] if label else []
        if kind:
            segments.append(Segment(f" {kind}", kind_style))
        segments += [Segment(" " * gap, base), Segment(figure, figure_style)]
        share = self.share
        filled = 0 if share is None else min(round(share * width), width)
        if share is not None and share > 0 and filled == 0:
            filled = 1  # something is there: show it
        bar = [Segment("━" * filled, bar_style)] if filled else []
        if width - filled:
            bar.append(Segment("━" * (width - filled), empty_style))
        # The offsets are where a text selection starts, as Textual's own lines have them.
        return Strip(segments, width).apply_offsets(0, 0), Strip(bar, width).apply_offsets(0, 1)

    def render(self) -> Text:
        width = max(self.content_size.width, 10)
        style = self.get_component_rich_style
        head = Text(no_wrap=True, overflow="ellipsis")
        head.append(self.label, style("token-gauge--label"))
        if self.kind:
            head.append(f" {self.kind}", style("token-gauge--kind"))
        figure = self.figure_text()
        gap = width - head.cell_len - len(figure)
        if gap < 1 and figure.endswith(")") and " (" in figure:
            # A narrow sidebar: where the figure came from "(demo)" goes before the
            # label is cut ("conte… 575 of 32.8k (demo)" said less than "context 575 of 32.8k").
            figure = figure[: figure.rindex(" (")]
            gap = width - head.cell_len - len(figure)
        if gap >= 1:
            head.append(" " * gap)
            head.append(figure, style("token-gauge--figure"))
        else:
            head.truncate(max(width - len(figure) - 1, 1), overflow="ellipsis")
            head.append(" " + figure, style("token-gauge--figure"))
        share = self.share
        filled = 0 if share is None else min(round(share * width), width)
        if share is not None and share > 0 and filled == 0:
            filled = 1  # something is there: show it
        bar = Text(no_wrap=True)
        bar.append("━" * filled, style("token-gauge--bar"))
        bar.append("━" * (width - filled), style("token-gauge--empty"))
        return Text("\n").join([head, bar])
