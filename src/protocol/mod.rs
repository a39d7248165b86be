//! What goes on the wire: JSON-RPC 2.0 frames, MCP method names and protocol versions.

pub mod base64;
pub mod envelope;
pub mod frontmatter;
pub mod header_value;
pub mod json_text;
pub mod jsonrpc;
pub mod mcp_header;
pub mod methods;
pub mod object_text;
pub mod params;
pub mod reply;
pub mod scan;
pub mod versions;
