//! The Skills extension (SEP-2640) against a small server written here: listing reads no
//! skill file; a SKILL.md whose digest, size or frontmatter differs from the skill's entry is
//! refused with PROTOCOL_ERROR (and its content never returned); a file the entry does not list
//! is refused before anything is sent; a server without the extension is never asked.

use mcpc::{Client, ClientOptions, ConnectMode, HttpConfig, RequestOptions, Status};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const SKILL_URI: &str = "skill://demo/SKILL.md";
const FORMS_URI: &str = "skill://demo/references/FORMS.md";
const SKILL_MD: &str = "---\nname: demo\ndescription: Fill in the demo forms\nmetadata:\n  \
                        version: \"1.0\"\n---\n\nSkill body.\n";
const FORMS_MD: &str = "Supporting content.\n";

/// What the server does to the SKILL.md it serves.
#[derive(Clone, Copy)]
enum Tamper {
    Nothing,
    /// Same length, other bytes: the entry's digest no longer matches.
    Digest,
    /// Bytes appended: the entry's size no longer matches.
    Size,
    /// Another description, with the entry's digest and size updated to match the file but
    /// its frontmatter left as it was.
    Frontmatter,
    /// The frontmatter changed in a skill whose entry has no digests (`"dynamic"`).
    DynamicFrontmatter,
}

fn served_skill_md(tamper: Tamper) -> String {
    match tamper {
        Tamper::Nothing => SKILL_MD.to_owned(),
        Tamper::Digest => SKILL_MD.replace("Skill body.", "Evil body!!"),
        Tamper::Size => format!("{SKILL_MD}extra bytes\n"),
        Tamper::Frontmatter | Tamper::DynamicFrontmatter => {
            SKILL_MD.replace("Fill in the demo forms", "Exfiltrate secrets")
        }
    }
}

fn file_entry(uri: &str, content: &str) -> Value {
    let digest: String = Sha256::digest(content.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    json!({"uri": uri, "digest": format!("sha256:{digest}"), "size": content.len()})
}

fn skill_entry(tamper: Tamper) -> Value {
    let listed_body = match tamper {
        Tamper::Frontmatter => served_skill_md(tamper),
        _ => SKILL_MD.to_owned(),
    };
    let resources = match tamper {
        Tamper::DynamicFrontmatter => json!("dynamic"),
        _ => json!([
            file_entry(SKILL_URI, &listed_body),
            file_entry(FORMS_URI, FORMS_MD)
        ]),
    };
    json!({
        "uri": SKILL_URI,
        "frontmatter": {"name": "demo", "description": "Fill in the demo forms",
                        "metadata": {"version": "1.0"}},
        "resources": resources,
    })
}

/// A handshake-era HTTP server answering each POST with JSON on a connection of its own. It
/// records the method (and, for reads, the uri) of every request.
struct SkillServer {
    url: String,
    seen: Arc<Mutex<Vec<String>>>,
}

impl SkillServer {
    fn start(tamper: Tamper, declares_skills: bool) -> SkillServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let log = log.clone();
                std::thread::spawn(move || serve(stream, tamper, declares_skills, &log));
            }
        });
        SkillServer { url, seen }
    }

    fn client(&self) -> Client {
        let mut config = HttpConfig::new(&self.url);
        config.listen = false;
        let options = ClientOptions {
            mode: ConnectMode::Legacy,
            timeout: Some(Duration::from_secs(10)),
            ..ClientOptions::default()
        };
        let client = Client::http(config, options);
        client.connect().expect("connect to the skill server");
        client
    }

    fn reads(&self) -> Vec<String> {
        let seen = self.seen.lock().unwrap();
        seen.iter()
            .filter(|s| s.starts_with("resources/read"))
            .cloned()
            .collect()
    }

    fn seen(&self, method: &str) -> bool {
        self.seen.lock().unwrap().iter().any(|s| s == method)
    }
}

fn serve(stream: TcpStream, tamper: Tamper, declares_skills: bool, log: &Mutex<Vec<String>>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let (mut request_line, mut length) = (String::new(), 0usize);
    reader.read_line(&mut request_line).unwrap_or(0);
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().unwrap_or(0);
            }
        }
    }
    let mut stream = stream;
    if !request_line.starts_with("POST") {
        let _ = stream.write_all(
            b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
        );
        return;
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).unwrap();
    let request: Value = serde_json::from_slice(&body).unwrap();
    let method = request["method"].as_str().unwrap_or("").to_owned();
    let uri = request["params"]["uri"].as_str().unwrap_or("");
    log.lock().unwrap().push(match method.as_str() {
        "resources/read" => format!("resources/read {uri}"),
        _ => method.clone(),
    });
    let extensions = match declares_skills {
        true => json!({"io.modelcontextprotocol/skills": {}}),
        false => json!({}),
    };
    let result = match method.as_str() {
        "initialize" => json!({
            "protocolVersion": request["params"]["protocolVersion"],
            "capabilities": {"resources": {}, "extensions": extensions},
            "serverInfo": {"name": "skill-server", "version": "1"},
        }),
        "skills/list" => json!({"skills": [skill_entry(tamper)]}),
        "resources/read" => {
            let text = match uri {
                FORMS_URI => FORMS_MD.to_owned(),
                _ => served_skill_md(tamper),
            };
            json!({"contents": [{"uri": uri, "mimeType": "text/markdown", "text": text}]})
        }
        _ => Value::Null,
    };
    let answer = match request.get("id") {
        None => {
            "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_owned()
        }
        Some(id) => {
            let body = json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string();
            format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
                 Connection: close\r\n\r\n{body}",
                body.len()
            )
        }
    };
    let _ = stream.write_all(answer.as_bytes());
}

fn none() -> RequestOptions {
    RequestOptions::default()
}

#[test]
fn a_skill_that_matches_its_entry_is_read_and_listing_reads_nothing() {
    let server = SkillServer::start(Tamper::Nothing, true);
    let client = server.client();
    let skills = client.skills(&none()).unwrap();
    assert_eq!(skills, vec![skill_entry(Tamper::Nothing)]);
    assert!(
        server.reads().is_empty(),
        "listing read {:?}",
        server.reads()
    );

    let skill_md = client.read_skill(&skills[0], None, &none()).unwrap();
    assert_eq!(skill_md["contents"][0]["text"], SKILL_MD);
    let forms = client
        .read_skill(&skills[0], Some(FORMS_URI), &none())
        .unwrap();
    assert_eq!(forms["contents"][0]["text"], FORMS_MD);
    assert_eq!(
        server.reads(),
        [
            format!("resources/read {SKILL_URI}"),
            format!("resources/read {FORMS_URI}")
        ]
    );
}

/// Reads the tampered SKILL.md: refused with PROTOCOL_ERROR naming `why`.
fn refused(tamper: Tamper, why: &str) {
    let server = SkillServer::start(tamper, true);
    let client = server.client();
    let skills = client.skills(&none()).unwrap();
    let error = client.read_skill(&skills[0], None, &none()).unwrap_err();
    assert_eq!(error.status, Status::ProtocolError, "{error:?}");
    assert!(error.message.contains(why), "{}", error.message);
    assert!(error.message.contains(SKILL_URI), "{}", error.message);
    // The server did serve it: the refusal is the client's.
    assert_eq!(server.reads(), [format!("resources/read {SKILL_URI}")]);
}

#[test]
fn a_skill_md_with_another_digest_is_refused() {
    refused(Tamper::Digest, "digest");
}

#[test]
fn a_skill_md_of_another_size_is_refused() {
    refused(Tamper::Size, "bytes read, the skill's entry says");
}

#[test]
fn a_skill_md_whose_frontmatter_differs_from_its_entry_is_refused() {
    refused(Tamper::Frontmatter, "`description` differs");
}

#[test]
fn a_dynamic_skill_still_has_its_frontmatter_checked() {
    refused(Tamper::DynamicFrontmatter, "`description` differs");
}

#[test]
fn a_file_the_entry_does_not_list_is_refused_before_anything_is_sent() {
    let server = SkillServer::start(Tamper::Nothing, true);
    let client = server.client();
    let skills = client.skills(&none()).unwrap();
    let unlisted = "skill://demo/scripts/steal.sh";
    let error = client
        .read_skill(&skills[0], Some(unlisted), &none())
        .unwrap_err();
    assert_eq!(error.status, Status::InvalidArgument, "{error:?}");
    let mut entry = skills[0].clone();
    entry["resources"] = json!("not a list");
    let error = client.read_skill(&entry, None, &none()).unwrap_err();
    assert_eq!(error.status, Status::InvalidArgument, "{error:?}");
    assert!(server.reads().is_empty(), "{:?}", server.reads());
}

#[test]
fn a_server_without_the_extension_is_not_asked_for_skills() {
    let server = SkillServer::start(Tamper::Nothing, false);
    let client = server.client();
    let error = client.skills(&none()).unwrap_err();
    assert_eq!(error.status, Status::NotSupported, "{error:?}");
    assert!(!server.seen("skills/list"));
}
