//! Command-line flags. Each one switches on a behaviour (often a misbehaviour)
//! that some client test needs; with no flags the server is well-behaved.

use std::path::PathBuf;

pub const USAGE: &str = "\
usage: mcpc-test-server [FLAGS]
  --log PATH              append every stdin line to PATH (default: $MCPC_TEST_LOG)
  --protocol-version V    answer initialize with V, whatever the client offered
  --page-size N           paginate the list methods, N items per page
  --repeat-cursor         every list page returns nextCursor \"same\"
  --endless-pages         every list page returns a new nextCursor, forever
  --notify-before-init    send notifications before answering initialize
  --modern                also speak 2026-07-28: answer server/discover, check the
                          _meta envelope of requests that carry one, stamp results
  --modern-only           --modern, and refuse initialize and envelope-less requests
  --supported-versions L  comma-separated versions the modern era accepts and
                          announces (default 2026-07-28)
  --discover MODE         how --modern answers server/discover: ok (default),
                          malformed, not-object, silent or error
  --reject-first N        with --modern, refuse the first N modern requests as
                          an unsupported version, whatever they offered
  --silent-initialize     read initialize but never answer it
  --ignore-stdin-eof      keep running after stdin closes
  --ignore-sigterm        ignore SIGTERM
  --slow-start-ms N       wait N ms before reading stdin (a slow server start)
  --ttl-ms N              the ttlMs of modern lists and reads (default 0)
  --legacy-tasks          2025-11-25 experimental tasks: declare tasks.requests.tools.call,
                          list the tool `task` (taskSupport optional), and run a tools/call
                          of it that carries `task` as a task (tasks/get, tasks/result,
                          tasks/cancel)
  --emit-on-listen JSON   events (as test/emit takes them) every listen gets at once
  --stall-reading-while PATH  once initialized, stop reading stdin while PATH exists
                          (a server that stops reading; it goes on when PATH is removed)
  --hold-memory-mib N     be a helper, not a server: touch N MiB, say \"ready\" on stdout,
                          then sleep (300 s at most); what the tool group_helper starts
  --fail-start-while PATH while PATH exists, append a line to it and exit with status 1
                          at start (a server that cannot start; counts the attempts)
  --stderr-lines N        write N lines to stderr at startup
  --stderr-every-request  write one stderr line per request
  --http PORT             serve Streamable HTTP at http://127.0.0.1:PORT/mcp instead of
                          stdio (0: any free port); the first stdout line says where,
                          and the server exits when stdin closes
  --http-json             answer HTTP requests with JSON bodies, not SSE streams
  --sse                   with --http, serve the 2024-11-05 HTTP+SSE transport instead:
                          GET http://127.0.0.1:PORT/sse opens the event stream, which names
                          /messages?session=ID as the endpoint (see http/legacy_sse.rs)
  --drop-streams MODE     close tools/call SSE streams before the answer: primed
                          (after an event id, so a GET with Last-Event-ID resumes it),
                          unprimed (no event id), or always (resumptions drop too)
  --retry-ms N            the SSE retry delay announced when priming (default 200)
  --expire-session-after N  a legacy session ends after serving N requests (then 404)
  --standalone-delay-ms N  answer the standalone GET only after N ms
  --flood METHOD          send METHOD to the client as fast as possible: over stdio once
                          initialized, over HTTP on each standalone GET stream (a method
                          under notifications/ as a notification, others as requests)
  --flood-count N         stop the flood after N messages (default: never)
  --flood-secs S          stop the flood after S seconds, and read nothing from the
                          client while it lasts (stdio: stdin waits; HTTP: POSTs wait)
  --flood-bytes N         each flooded notifications/message (sampling/createMessage)
                          carries N bytes of data (of text)
  --pause-reading-every N:MS  after every N requests read, stop reading stdin for MS ms
  --require-auth          with --http, be an OAuth-protected MCP server and its own
                          authorization server (issuer http://127.0.0.1:PORT; see oauth.rs)
  --auth-tools-scope S    tools/call also needs scope S (else 403 insufficient_scope)
  --auth-token-uses N     an access token serves N MCP requests, then gets 401
  --auth-client ID:SECRET  a client registered in advance (for pre-registration and the
                          client_credentials grant)
  --auth-fault F          misbehave: issuer (metadata names another issuer), resource
                          (resource metadata names another server), iss (the redirect
                          names another issuer), never-enough (tools/call always 403),
                          echo-token-error (the token endpoint refuses, echoing what
                          it received)";

#[derive(Debug, Default)]
pub struct Args {
    pub log: Option<PathBuf>,
    pub protocol_version: Option<String>,
    pub page_size: Option<usize>,
    pub repeat_cursor: bool,
    pub endless_pages: bool,
    pub notify_before_init: bool,
    pub modern: bool,
    pub modern_only: bool,
    /// `None` means the one version we speak, 2026-07-28.
    pub supported_versions: Option<Vec<String>>,
    pub discover: DiscoverMode,
    pub reject_first: usize,
    pub silent_initialize: bool,
    pub ignore_stdin_eof: bool,
    pub ignore_sigterm: bool,
    /// Sleep this long before reading stdin, like a server slow to start.
    pub slow_start_ms: u64,
    /// After `notifications/initialized`, read nothing while this file exists.
    pub stall_reading_while: Option<PathBuf>,
    /// Be a helper holding this many MiB (see `tools::group_helper`), not a server.
    pub hold_memory_mib: Option<usize>,
    pub fail_start_while: Option<PathBuf>,
    pub stderr_lines: usize,
    pub stderr_every_request: bool,
    pub http: Option<u16>,
    pub http_json: bool,
    /// `--sse`: the 2024-11-05 HTTP+SSE transport instead of Streamable HTTP.
    pub sse: bool,
    pub drop_streams: Option<DropStreams>,
    pub retry_ms: u64,
    pub expire_session_after: Option<usize>,
    pub standalone_delay_ms: u64,
    pub flood: Option<String>,
    pub flood_count: Option<u64>,
    pub flood_secs: Option<u64>,
    /// `--flood-bytes N`: each flooded `notifications/message` carries N bytes of data.
    pub flood_bytes: Option<usize>,
    /// Stop reading stdin for `.1` ms after every `.0` requests.
    pub pause_reading: Option<(u64, u64)>,
    /// The `ttlMs` of modern cacheable results (0 by default).
    pub ttl_ms: u64,
    /// Events (as `test/emit` takes them) every listen gets right after its acknowledgement.
    pub emit_on_listen: Option<serde_json::Value>,
    pub require_auth: bool,
    pub legacy_tasks: bool,
    pub auth_tools_scope: Option<String>,
    pub auth_token_uses: Option<usize>,
    pub auth_fault: Option<String>,
    /// A client registered in advance: (id, secret).
    pub auth_client: Option<(String, String)>,
}

impl Args {
    /// Parses the flags (without the program name). `Ok(None)` means `--help`.
    pub fn parse(mut argv: impl Iterator<Item = String>) -> Result<Option<Args>, String> {
        let mut args = Args {
            retry_ms: 200,
            // The flag, parsed below, overrides the environment.
            log: std::env::var_os("MCPC_TEST_LOG")
                .filter(|path| !path.is_empty())
                .map(PathBuf::from),
            ..Args::default()
        };
        while let Some(flag) = argv.next() {
            let mut value = || argv.next().ok_or_else(|| format!("{flag} needs a value"));
            match flag.as_str() {
                "--log" => args.log = Some(value()?.into()),
                "--protocol-version" => args.protocol_version = Some(value()?),
                "--page-size" => match parse_number(&flag, value()?)? {
                    0 => return Err("--page-size must be at least 1".into()),
                    n => args.page_size = Some(n),
                },
                "--repeat-cursor" => args.repeat_cursor = true,
                "--endless-pages" => args.endless_pages = true,
                "--notify-before-init" => args.notify_before_init = true,
                "--modern" => args.modern = true,
                "--modern-only" => {
                    args.modern = true;
                    args.modern_only = true;
                }
                "--supported-versions" => {
                    // An empty list is allowed: a server that accepts no version at all.
                    let list = value()?;
                    let versions = list.split(',').map(str::trim).filter(|v| !v.is_empty());
                    args.supported_versions = Some(versions.map(str::to_owned).collect());
                }
                "--discover" => args.discover = DiscoverMode::parse(&value()?)?,
                "--reject-first" => args.reject_first = parse_number(&flag, value()?)?,
                "--silent-initialize" => args.silent_initialize = true,
                "--ignore-stdin-eof" => args.ignore_stdin_eof = true,
                "--ignore-sigterm" => args.ignore_sigterm = true,
                "--emit-on-listen" => {
                    let events = value()?;
                    let events = serde_json::from_str(&events)
                        .map_err(|e| format!("--emit-on-listen wants a JSON array: {e}"))?;
                    args.emit_on_listen = Some(events);
                }
                "--ttl-ms" => args.ttl_ms = parse_number(&flag, value()?)? as u64,
                "--slow-start-ms" => args.slow_start_ms = parse_number(&flag, value()?)? as u64,
                "--stall-reading-while" => args.stall_reading_while = Some(value()?.into()),
                "--hold-memory-mib" => args.hold_memory_mib = Some(parse_number(&flag, value()?)?),
                "--fail-start-while" => args.fail_start_while = Some(value()?.into()),
                "--stderr-lines" => args.stderr_lines = parse_number(&flag, value()?)?,
                "--stderr-every-request" => args.stderr_every_request = true,
                "--http" => {
                    let port = value()?;
                    let port = port
                        .parse()
                        .map_err(|_| format!("--http needs a port, got {port:?}"))?;
                    args.http = Some(port);
                }
                "--http-json" => args.http_json = true,
                "--sse" => args.sse = true,
                "--drop-streams" => args.drop_streams = Some(DropStreams::parse(&value()?)?),
                "--retry-ms" => args.retry_ms = parse_number(&flag, value()?)? as u64,
                "--expire-session-after" => {
                    args.expire_session_after = Some(parse_number(&flag, value()?)?)
                }
                "--standalone-delay-ms" => {
                    args.standalone_delay_ms = parse_number(&flag, value()?)? as u64
                }
                "--flood" => args.flood = Some(value()?),
                "--require-auth" => args.require_auth = true,
                "--legacy-tasks" => args.legacy_tasks = true,
                "--auth-tools-scope" => args.auth_tools_scope = Some(value()?),
                "--auth-token-uses" => args.auth_token_uses = Some(parse_number(&flag, value()?)?),
                "--auth-fault" => args.auth_fault = Some(value()?),
                "--auth-client" => {
                    let pair = value()?;
                    let (id, secret) = pair
                        .split_once(':')
                        .ok_or_else(|| format!("--auth-client takes ID:SECRET, not {pair}"))?;
                    args.auth_client = Some((id.to_owned(), secret.to_owned()));
                }
                "--flood-count" => args.flood_count = Some(parse_number(&flag, value()?)? as u64),
                "--flood-secs" => args.flood_secs = Some(parse_number(&flag, value()?)? as u64),
                "--flood-bytes" => args.flood_bytes = Some(parse_number(&flag, value()?)?),
                "--pause-reading-every" => {
                    let spec = value()?;
                    let parsed = spec.split_once(':').and_then(|(n, ms)| {
                        Some((n.parse::<u64>().ok()?, ms.parse::<u64>().ok()?))
                    });
                    match parsed {
                        Some((n, ms)) if n > 0 => args.pause_reading = Some((n, ms)),
                        _ => return Err(format!("--pause-reading-every needs N:MS, got {spec:?}")),
                    }
                }
                "-h" | "--help" => return Ok(None),
                _ => return Err(format!("unknown flag {flag}")),
            }
        }
        Ok(Some(args))
    }
}

/// How `server/discover` is answered under `--modern`: well, or in one of the
/// broken ways a client's discovery has to survive.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub enum DiscoverMode {
    #[default]
    Ok,
    /// The result `{}`.
    Malformed,
    /// The result `"x"`.
    NotObject,
    /// No answer at all.
    Silent,
    /// A -32603 error.
    Error,
}

impl DiscoverMode {
    fn parse(mode: &str) -> Result<Self, String> {
        Ok(match mode {
            "ok" => DiscoverMode::Ok,
            "malformed" => DiscoverMode::Malformed,
            "not-object" => DiscoverMode::NotObject,
            "silent" => DiscoverMode::Silent,
            "error" => DiscoverMode::Error,
            _ => return Err(format!("unknown --discover mode {mode:?}")),
        })
    }
}

/// How `--drop-streams` closes streams early.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum DropStreams {
    /// After a priming event with an id: a GET with `Last-Event-ID` resumes the stream.
    Primed,
    /// Without any event id: there is nothing to resume.
    Unprimed,
    /// Primed, and every resumption is dropped the same way, bringing nothing new.
    Always,
}

impl DropStreams {
    fn parse(mode: &str) -> Result<Self, String> {
        Ok(match mode {
            "primed" => DropStreams::Primed,
            "unprimed" => DropStreams::Unprimed,
            "always" => DropStreams::Always,
            _ => return Err(format!("unknown --drop-streams mode {mode:?}")),
        })
    }
}

fn parse_number(flag: &str, value: String) -> Result<usize, String> {
    value
        .parse()
        .map_err(|_| format!("{flag} needs a number, got {value:?}"))
}
