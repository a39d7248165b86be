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
  --modern                also answer server/discover (protocol 2026-07-28)
  --ignore-stdin-eof      keep running after stdin closes
  --ignore-sigterm        ignore SIGTERM
  --stderr-lines N        write N lines to stderr at startup
  --stderr-every-request  write one stderr line per request";

#[derive(Debug, Default)]
pub struct Args {
    pub log: Option<PathBuf>,
    pub protocol_version: Option<String>,
    pub page_size: Option<usize>,
    pub repeat_cursor: bool,
    pub endless_pages: bool,
    pub notify_before_init: bool,
    pub modern: bool,
    pub ignore_stdin_eof: bool,
    pub ignore_sigterm: bool,
    pub stderr_lines: usize,
    pub stderr_every_request: bool,
}

impl Args {
    /// Parses the flags (without the program name). `Ok(None)` means `--help`.
    pub fn parse(mut argv: impl Iterator<Item = String>) -> Result<Option<Args>, String> {
        let mut args = Args {
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
                "--ignore-stdin-eof" => args.ignore_stdin_eof = true,
                "--ignore-sigterm" => args.ignore_sigterm = true,
                "--stderr-lines" => args.stderr_lines = parse_number(&flag, value()?)?,
                "--stderr-every-request" => args.stderr_every_request = true,
                "-h" | "--help" => return Ok(None),
                _ => return Err(format!("unknown flag {flag}")),
            }
        }
        Ok(Some(args))
    }
}

fn parse_number(flag: &str, value: String) -> Result<usize, String> {
    value
        .parse()
        .map_err(|_| format!("{flag} needs a number, got {value:?}"))
}
