"""The readers a context can be laid out for, by name (core.context.purposes lays it out). A module of its own so
that the command line's parser, which offers them, stays light: `cortex` parses every command before it sends it to
the resident server, and importing the layout's dependencies took a tenth of a warm command's time."""

PURPOSES = ("general", "assistant", "planner", "research", "drafting")
DEFAULT = "general"
