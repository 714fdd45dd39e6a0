"""`plain`: a reply's Markdown as the words it shows, for one-line previews (the
tree's rows). It lives in `store.text`, beside `one_line`: chats are named with it
below the widgets, in the app and in `chatui ask`."""

from store.text import plain

__all__ = ["plain"]
