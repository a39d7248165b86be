//! The list cache (SEP-2549): `tools/list`, `prompts/list`, `resources/list` and
//! `resources/templates/list` pages that carry `ttlMs` > 0 are served from here while fresh,
//! each page under its method and cursor. A `list_changed` notification drops its kind's pages
//! as it arrives (before the host's callback hears of it), a new connection drops them all, and
//! `RequestOptions::bypass_cache` asks the server anyway (and keeps the new page).
//!
//! The pages kept are bounded in count ([`MAX_CACHED_PAGES`]) and in bytes
//! ([`MAX_CACHED_BYTES`], as JSON text): a server that gives long `ttlMs` to many pages, or to
//! large ones, or a new cursor on every walk, cannot grow the cache without limit. Expired
//! pages are dropped when a page is stored; a page that does not fit then is not kept (the
//! next ask goes to the server). One page of any size is kept when none is.
//!
//! `cacheScope`: a client keeps the same headers, so the same authorization context, for life;
//! "private" and "public" pages are kept alike. Results without `ttlMs` (the handshake era's)
//! are never kept.

use crate::error::Error;
use crate::protocol::jsonrpc::Incoming;
use crate::protocol::methods;
use crate::sync::lock;
use crate::transport::Inbound;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[derive(Default)]
pub(super) struct Cache {
    state: Mutex<State>,
}

/// The most list pages kept, and bytes of them (as JSON text).
use crate::engine::limits::{MAX_CACHED_BYTES, MAX_CACHED_PAGES};

#[derive(Default)]
struct State {
    pages: HashMap<(&'static str, Option<String>), Page>,
    /// What the pages hold, in bytes.
    bytes: usize,
    /// Bumped when a method's pages are dropped, so a page asked for before that is not kept.
    generations: HashMap<&'static str, u64>,
}

struct Page {
    result: Value,
    fresh_until: Instant,
    bytes: usize,
}

/// The list methods whose pages are kept.
const CACHED: [&str; 4] = [
    methods::TOOLS_LIST,
    methods::PROMPTS_LIST,
    methods::RESOURCES_LIST,
    methods::RESOURCE_TEMPLATES_LIST,
];

/// What a fetch needs to store its page: the method's generation when it started.
pub(super) struct Ticket {
    method: &'static str,
    generation: u64,
}

impl Cache {
    /// A fresh page of `method` at `cursor`, if one is kept.
    pub fn get(&self, method: &str, cursor: Option<&str>) -> Option<Value> {
        let method = cached(method)?;
        let state = lock(&self.state);
        let page = state.pages.get(&(method, cursor.map(str::to_owned)))?;
        (Instant::now() < page.fresh_until).then(|| page.result.clone())
    }

    /// Taken before asking the server for a page.
    pub fn ticket(&self, method: &str) -> Option<Ticket> {
        let method = cached(method)?;
        let generation = lock(&self.state).generations.get(method).copied();
        Some(Ticket {
            method,
            generation: generation.unwrap_or(0),
        })
    }

    /// Keeps the page while its `ttlMs` lasts, unless its kind changed since the ticket.
    pub fn put(&self, ticket: Ticket, cursor: Option<&str>, result: &Value) {
        let ttl = match result.get("ttlMs").and_then(Value::as_u64) {
            Some(ms) if ms > 0 => Duration::from_millis(ms),
            _ => return,
        };
        let Some(fresh_until) = Instant::now().checked_add(ttl) else {
            return;
        };
        let bytes = crate::protocol::json_text::estimated_len(result);
        let key = (ticket.method, cursor.map(str::to_owned));
        let mut state = lock(&self.state);
        if state.generations.get(ticket.method).copied().unwrap_or(0) != ticket.generation {
            return;
        }
        // The page it replaces, and the expired ones, make room first.
        let now = Instant::now();
        state.retain(|page_key, page| *page_key != key && now < page.fresh_until);
        let fits = state.pages.is_empty()
            || (state.pages.len() < MAX_CACHED_PAGES
                && state.bytes.saturating_add(bytes) <= MAX_CACHED_BYTES);
        if !fits {
            return;
        }
        let page = Page {
            result: result.clone(),
            fresh_until,
            bytes,
        };
        state.bytes += bytes;
        state.pages.insert(key, page);
    }

    /// Drops the pages of `methods`.
    fn invalidate(&self, methods: &[&'static str]) {
        let mut state = lock(&self.state);
        state.retain(|(method, _), _| !methods.contains(method));
        for method in methods {
            *state.generations.entry(method).or_default() += 1;
        }
    }

    pub fn clear(&self) {
        self.invalidate(&CACHED);
    }

    /// Wraps a connection's inbound sink so list changes drop their pages as they arrive.
    pub fn watching(self: &Arc<Self>, inner: Arc<dyn Inbound>) -> Arc<dyn Inbound> {
        Arc::new(Watching {
            inner,
            cache: self.clone(),
        })
    }
}

impl State {
    /// Keeps the pages for which `keep` holds, and counts the bytes of those it drops out.
    fn retain(&mut self, mut keep: impl FnMut(&(&'static str, Option<String>), &Page) -> bool) {
        let mut freed = 0;
        self.pages.retain(|key, page| {
            let kept = keep(key, page);
            if !kept {
                freed += page.bytes;
            }
            kept
        });
        self.bytes -= freed;
    }
}

fn cached(method: &str) -> Option<&'static str> {
    CACHED.into_iter().find(|m| *m == method)
}

struct Watching {
    inner: Arc<dyn Inbound>,
    cache: Arc<Cache>,
}

impl Inbound for Watching {
    fn message(&self, message: Incoming) {
        if let Incoming::Notification { method, .. } = &message {
            match method.as_str() {
                "notifications/tools/list_changed" => self.cache.invalidate(&[methods::TOOLS_LIST]),
                "notifications/prompts/list_changed" => {
                    self.cache.invalidate(&[methods::PROMPTS_LIST])
                }
                "notifications/resources/list_changed" => self
                    .cache
                    .invalidate(&[methods::RESOURCES_LIST, methods::RESOURCE_TEMPLATES_LIST]),
                _ => {}
            }
        }
        self.inner.message(message);
    }
    fn bad_frame(&self, error: Error, fatal_for_pending: bool) {
        self.inner.bad_frame(error, fatal_for_pending);
    }
    fn request_failed(&self, id: i64, error: Error) {
        self.inner.request_failed(id, error);
    }
    fn closed(&self, error: Error) {
        self.inner.closed(error);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keeps_pages_with_a_ttl_until_their_kind_changes() {
        let cache = Cache::default();
        let ticket = cache.ticket("tools/list").unwrap();
        cache.put(ticket, None, &json!({"tools": [], "ttlMs": 60000}));
        assert!(cache.get("tools/list", None).is_some());
        assert!(cache.get("tools/list", Some("c1")).is_none());
        let ticket = cache.ticket("prompts/list").unwrap();
        cache.put(ticket, None, &json!({"prompts": [], "ttlMs": 0}));
        assert!(cache.get("prompts/list", None).is_none(), "ttl 0: not kept");
        // A page asked for before a change is not kept.
        let ticket = cache.ticket("tools/list").unwrap();
        cache.invalidate(&[methods::TOOLS_LIST]);
        assert!(cache.get("tools/list", None).is_none());
        cache.put(ticket, None, &json!({"tools": [], "ttlMs": 60000}));
        assert!(cache.get("tools/list", None).is_none());
        assert!(cache.ticket("tools/call").is_none());
        let ticket = cache.ticket("tools/list").unwrap();
        cache.put(ticket, None, &json!({"tools": [], "ttlMs": u64::MAX}));
    }
}
