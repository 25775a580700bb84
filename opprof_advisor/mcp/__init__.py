"""mcp/: `advisor mcp`, the commands (commands/) as Model Context Protocol tools."""
