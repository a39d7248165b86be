//! One method per MCP request, and the all-pages walks.

use super::connect::{supported_versions, UNSUPPORTED_VERSION};
use super::mrtr::{input_required, is_input_required};
use super::tasks::Leg;
use super::{Client, RequestOptions};
use crate::engine::router::ListenWatch;
use crate::engine::CallOptions;
use crate::error::{Error, Result, Status};
use crate::handlers::LogLevel;
use crate::protocol::mcp_header;
use crate::protocol::methods;
use crate::protocol::versions;
use serde_json::{json, Map, Value};
use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

impl Client {
    /// Sends any request and returns its `result`. The other request methods are built on it.
    /// An `input_required` result ends with INPUT_REQUIRED here; `call_tool`, `get_prompt` and
    /// `read_resource` answer it through the input handlers.
    pub fn request(
        &self,
        method: &str,
        params: Option<Value>,
        opts: &RequestOptions,
    ) -> Result<Value> {
        let started = Instant::now();
        let opts = &self.with_progress_token(opts);
        let result = self.request_raw(method, params, opts)?;
        if is_input_required(&result) {
            return Err(input_required(
                result,
                format!("{method}: the server needs input (input_required)"),
            ));
        }
        self.settle_task(method, result, opts, started)
    }

    /// Sends a request in the connection's era and checks the result's kind, leaving
    /// `input_required` and task results to the caller.
    pub(super) fn request_raw(
        &self,
        method: &str,
        params: Option<Value>,
        opts: &RequestOptions,
    ) -> Result<Value> {
        self.send_raw(method, params, opts, Leg::Call, None)
    }

    /// `request_raw` for one leg of a call: a task's poll (`Leg::TaskPoll`) is never
    /// cancelled on the wire (the call's cancel becomes one `tasks/cancel` instead) and carries
    /// no progress token; a listen (`listen` set) has no timeout but its own.
    pub(super) fn send_raw(
        &self,
        method: &str,
        params: Option<Value>,
        opts: &RequestOptions,
        leg: Leg,
        listen: Option<Arc<ListenWatch>>,
    ) -> Result<Value> {
        if let Some(params) = &params {
            if !params.is_object() {
                return Err(Error::invalid("params must be a JSON object"));
            }
        }
        let session = self.session()?;
        let progress_token = match leg {
            Leg::Call => self.progress_token(opts),
            Leg::TaskPoll => None,
        };
        let params = with_meta(params, opts, progress_token.as_ref());
        let default_timeout = self.options.timeout.filter(|_| listen.is_none());
        let timeout = match opts.timeout.or(default_timeout) {
            Some(Duration::ZERO) => None,
            other => other,
        };
        let call = &CallOptions {
            cancellation: opts.cancellation.as_ref(),
            timeout,
            reset_timeout_on_progress: opts.reset_timeout_on_progress,
            max_total: opts.max_total_timeout,
            cancel_on_wire: leg == Leg::Call,
            progress: progress_token
                .as_ref()
                .map(|token| (token, opts.on_progress.clone())),
            listen,
        };
        let result = match &session.envelope {
            None => session.connection.call(method, params.as_ref(), call),
            Some(envelope) => {
                match session
                    .connection
                    .call(method, Some(&envelope.stamp(params.clone())), call)
                {
                    // The server wants another version: retry once with one we share.
                    Err(e) if e.code == Some(UNSUPPORTED_VERSION) => {
                        let supported =
                            supported_versions(e.data.as_ref().and_then(|d| d.get("supported")));
                        match versions::mutual_modern(supported.iter().map(String::as_str)) {
                            Some(version) => {
                                let retry = self.envelope(version).stamp(params);
                                session.connection.call(method, Some(&retry), call)
                            }
                            None => Err(e),
                        }
                    }
                    other => other,
                }
            }
        };
        if let Err(e) = &result {
            if e.status == Status::SessionExpired {
                // The server forgot us: the next connect starts a new session.
                self.forget_session(&session);
            }
        }
        let result = result?;
        match result.get("resultType") {
            None => Ok(result),
            Some(Value::String(kind)) if kind == "complete" || kind == "input_required" => {
                Ok(result)
            }
            // Only a call that declared the extension, and only for what the extension covers.
            Some(Value::String(kind)) if kind == "task" && self.accepts_task(method) => Ok(result),
            Some(other) => Err(Error::protocol(format!(
                "{method}: unknown resultType {other}"
            ))),
        }
    }

    /// The options with the call's progress token fixed, so every leg of the call (input
    /// rounds, a task's status) reports under one token.
    pub(super) fn with_progress_token(&self, opts: &RequestOptions) -> RequestOptions {
        RequestOptions {
            progress_token: self.progress_token(opts),
            ..opts.clone()
        }
    }

    /// The call's progress token: the host's, or one we make when the host wants progress.
    fn progress_token(&self, opts: &RequestOptions) -> Option<Value> {
        if opts.progress_token.is_some() {
            return opts.progress_token.clone();
        }
        let wanted = opts.on_progress.is_some() || self.options.callbacks.on_progress.is_some();
        wanted.then(|| {
            let n = self
                .next_progress_token
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            Value::from(format!("mcpc-{n}"))
        })
    }

    pub fn ping(&self, opts: &RequestOptions) -> Result<Value> {
        self.request(methods::PING, None, opts)
    }

    /// `server/discover` (the 2026-07-28 era's description of the server). Servers of the
    /// handshake era answer it with a -32601 error (SERVER_ERROR).
    pub fn discover(&self, opts: &RequestOptions) -> Result<Value> {
        self.request(methods::DISCOVER, None, opts)
    }

    /// `tools/call`. `arguments`, when given, must be a JSON object. Returns the tool's result
    /// (`content`, `structuredContent`, `isError`...).
    pub fn call_tool(
        &self,
        name: &str,
        arguments: Option<Value>,
        opts: &RequestOptions,
    ) -> Result<Value> {
        let params = named_params(name, arguments, "tool arguments")?;
        self.request_with_input(methods::TOOLS_CALL, params, opts)
    }

    pub fn read_resource(&self, uri: &str, opts: &RequestOptions) -> Result<Value> {
        self.request_with_input(methods::RESOURCES_READ, json!({ "uri": uri }), opts)
    }

    /// `prompts/get`. `arguments`, when given, must be a JSON object of strings.
    pub fn get_prompt(
        &self,
        name: &str,
        arguments: Option<Value>,
        opts: &RequestOptions,
    ) -> Result<Value> {
        let params = named_params(name, arguments, "prompt arguments")?;
        self.request_with_input(methods::PROMPTS_GET, params, opts)
    }

    /// `completion/complete`. `reference` is e.g. `{"type":"ref/prompt","name":"greet"}` and
    /// `argument` is `{"name": ..., "value": ...}`.
    pub fn complete(
        &self,
        reference: Value,
        argument: Value,
        context: Option<Value>,
        opts: &RequestOptions,
    ) -> Result<Value> {
        if !reference.is_object() || !argument.is_object() {
            return Err(Error::invalid(
                "completion ref and argument must be JSON objects",
            ));
        }
        let mut params = json!({ "ref": reference, "argument": argument });
        if let Some(context) = context {
            params["context"] = context;
        }
        self.request(methods::COMPLETE, Some(params), opts)
    }

    /// `logging/setLevel` (handshake era only): the least severe level of
    /// `notifications/message` the server should send.
    pub fn set_logging_level(&self, level: &str, opts: &RequestOptions) -> Result<Value> {
        self.handshake_era_only(methods::SET_LOGGING_LEVEL)?;
        self.request(
            methods::SET_LOGGING_LEVEL,
            Some(json!({ "level": level })),
            opts,
        )
    }

    /// `resources/subscribe` (handshake era only): ask for `notifications/resources/updated`.
    pub fn subscribe_resource(&self, uri: &str, opts: &RequestOptions) -> Result<Value> {
        self.handshake_era_only(methods::SUBSCRIBE)?;
        self.request(methods::SUBSCRIBE, Some(json!({ "uri": uri })), opts)
    }

    /// `resources/unsubscribe` (handshake era only).
    pub fn unsubscribe_resource(&self, uri: &str, opts: &RequestOptions) -> Result<Value> {
        self.handshake_era_only(methods::UNSUBSCRIBE)?;
        self.request(methods::UNSUBSCRIBE, Some(json!({ "uri": uri })), opts)
    }

    fn handshake_era_only(&self, method: &str) -> Result<()> {
        match self.is_modern() {
            true => Err(Error::new(
                Status::NotSupported,
                format!("{method} does not exist in the modern protocol era (2026-07-28) this connection speaks"),
            )),
            false => Ok(()),
        }
    }

    /// One page of `tools/list`; its `nextCursor` says where the next page starts.
    pub fn list_tools(&self, cursor: Option<&str>, opts: &RequestOptions) -> Result<Value> {
        let mut page = self.list_page(methods::TOOLS_LIST, cursor, opts)?;
        if let Some(Value::Array(tools)) = page.get_mut("tools") {
            self.drop_invalid_tools(tools);
        }
        Ok(page)
    }

    pub fn list_resources(&self, cursor: Option<&str>, opts: &RequestOptions) -> Result<Value> {
        self.list_page(methods::RESOURCES_LIST, cursor, opts)
    }

    pub fn list_resource_templates(
        &self,
        cursor: Option<&str>,
        opts: &RequestOptions,
    ) -> Result<Value> {
        self.list_page(methods::RESOURCE_TEMPLATES_LIST, cursor, opts)
    }

    pub fn list_prompts(&self, cursor: Option<&str>, opts: &RequestOptions) -> Result<Value> {
        self.list_page(methods::PROMPTS_LIST, cursor, opts)
    }

    /// Every tool, over all pages.
    pub fn tools(&self, opts: &RequestOptions) -> Result<Vec<Value>> {
        let mut tools = self.all_pages(methods::TOOLS_LIST, "tools", opts)?;
        self.drop_invalid_tools(&mut tools);
        Ok(tools)
    }

    /// Modern connections drop tools whose `x-mcp-header` annotations are invalid (SEP-2243)
    /// and log why; the other tools stay usable.
    fn drop_invalid_tools(&self, tools: &mut Vec<Value>) {
        if !self.is_modern() {
            return;
        }
        tools.retain(|tool| match mcp_header::check_tool(tool) {
            Ok(()) => true,
            Err(why) => {
                let name = tool.get("name").and_then(Value::as_str).unwrap_or("?");
                self.log(
                    LogLevel::Warning,
                    &format!("dropping tool {name:?} from tools/list: {why}"),
                );
                false
            }
        });
    }

    pub fn resources(&self, opts: &RequestOptions) -> Result<Vec<Value>> {
        self.all_pages(methods::RESOURCES_LIST, "resources", opts)
    }

    pub fn resource_templates(&self, opts: &RequestOptions) -> Result<Vec<Value>> {
        self.all_pages(methods::RESOURCE_TEMPLATES_LIST, "resourceTemplates", opts)
    }

    pub fn prompts(&self, opts: &RequestOptions) -> Result<Vec<Value>> {
        self.all_pages(methods::PROMPTS_LIST, "prompts", opts)
    }

    fn list_page(
        &self,
        method: &str,
        cursor: Option<&str>,
        opts: &RequestOptions,
    ) -> Result<Value> {
        if !opts.bypass_cache {
            if let Some(page) = self.cache.get(method, cursor) {
                return Ok(page);
            }
        }
        let ticket = self.cache.ticket(method);
        let params = cursor.map(|cursor| json!({ "cursor": cursor }));
        let page = self.request(method, params, opts)?;
        if let Some(ticket) = ticket {
            self.cache.put(ticket, cursor, &page);
        }
        Ok(page)
    }

    /// Fetches pages while the server gives a cursor. Stops at a cursor seen before (a server
    /// that loops), and fails with PAGINATION_LIMIT past `max_pages`. The same options (and so
    /// the same cancellation token) serve every page; a cancel discards the pages so far.
    fn all_pages(&self, method: &str, key: &str, opts: &RequestOptions) -> Result<Vec<Value>> {
        let mut items = Vec::new();
        let mut seen = HashSet::new();
        let mut cursor: Option<String> = None;
        for page_number in 1.. {
            let mut page = self.list_page(method, cursor.as_deref(), opts)?;
            match page.get_mut(key).map(Value::take) {
                Some(Value::Array(page_items)) => items.extend(page_items),
                None | Some(Value::Null) => {}
                Some(_) => {
                    return Err(Error::protocol(format!(
                        "{method}: `{key}` is not an array"
                    )))
                }
            }
            let next = match page.get("nextCursor") {
                None | Some(Value::Null) => return Ok(items),
                Some(Value::String(next)) => next.clone(),
                Some(_) => {
                    return Err(Error::protocol(format!(
                        "{method}: nextCursor is not a string"
                    )))
                }
            };
            if seen.contains(&next) {
                return Ok(items);
            }
            if page_number >= self.options.max_pages {
                return Err(Error::new(
                    Status::PaginationLimit,
                    format!(
                        "{method}: the server returned more than {} pages; raise max_pages if this is expected",
                        self.options.max_pages
                    ),
                ));
            }
            seen.insert(next.clone());
            cursor = Some(next);
        }
        unreachable!("the page loop only ends by returning")
    }
}

/// `{"name": name, "arguments": arguments}`, the arguments left out when absent.
fn named_params(name: &str, arguments: Option<Value>, what: &str) -> Result<Value> {
    let mut params = json!({ "name": name });
    if let Some(arguments) = arguments {
        if !arguments.is_object() {
            return Err(Error::invalid(format!("{what} must be a JSON object")));
        }
        params["arguments"] = arguments;
    }
    Ok(params)
}

/// Adds the options' `_meta` entries (and progress token) to the params.
fn with_meta(
    params: Option<Value>,
    opts: &RequestOptions,
    progress_token: Option<&Value>,
) -> Option<Value> {
    if opts.meta.is_none() && progress_token.is_none() {
        return params;
    }
    let mut meta = opts.meta.clone().unwrap_or_default();
    if let Some(token) = progress_token {
        meta.insert("progressToken".into(), token.clone());
    }
    let mut params = params.unwrap_or_else(|| Value::Object(Map::new()));
    params["_meta"] = Value::Object(meta);
    Some(params)
}
