"""What a tool is and what it may know: the interface every tool and the loop share, below the tools themselves.

``base`` (``Tool``), ``context`` (``ToolContext``, ``ToolError``, the services behind small protocols),
``inputs`` (the input types every tool uses), ``walking`` (paths, roots and globs).
"""
