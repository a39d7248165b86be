//! MCP method names used by the client.

pub const INITIALIZE: &str = "initialize";
pub const INITIALIZED: &str = "notifications/initialized";
pub const CANCELLED: &str = "notifications/cancelled";
pub const PING: &str = "ping";
pub const DISCOVER: &str = "server/discover";
pub const TOOLS_LIST: &str = "tools/list";
pub const TOOLS_CALL: &str = "tools/call";
pub const RESOURCES_LIST: &str = "resources/list";
pub const RESOURCE_TEMPLATES_LIST: &str = "resources/templates/list";
pub const RESOURCES_READ: &str = "resources/read";
pub const PROMPTS_LIST: &str = "prompts/list";
pub const PROMPTS_GET: &str = "prompts/get";
pub const COMPLETE: &str = "completion/complete";
pub const SET_LOGGING_LEVEL: &str = "logging/setLevel";
pub const SUBSCRIBE: &str = "resources/subscribe";
pub const UNSUBSCRIBE: &str = "resources/unsubscribe";
pub const TASKS_GET: &str = "tasks/get";
pub const TASKS_UPDATE: &str = "tasks/update";
pub const TASKS_CANCEL: &str = "tasks/cancel";
/// 2025-11-25 experimental tasks: the result of a task, once it has ended.
pub const TASKS_RESULT: &str = "tasks/result";
pub const LISTEN: &str = "subscriptions/listen";
pub const ROOTS_LIST_CHANGED: &str = "notifications/roots/list_changed";
