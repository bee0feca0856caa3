"""FM-2 tool failure cascades: a failed (or silently wrong) tool call takes the next steps down.

:class:`ToolCascadeDetector` (``detector``) tests what :func:`tool_window` (``tool_calls``)
reads from each window's tool calls.
"""

from detectors.tool_cascades.detector import ToolCascadeDetector
from detectors.tool_cascades.tool_calls import available_but_wrong, tool_window, trace_quality

__all__ = ["ToolCascadeDetector", "available_but_wrong", "tool_window", "trace_quality"]
