//! The Skills extension (`io.modelcontextprotocol/skills`, SEP-2640): listing a server's
//! skills, and reading a skill's files with the checks the extension puts on the client.
//!
//! A skill entry (from `skills/list`) is a manifest: the skill's frontmatter and every file
//! with its SHA-256 digest and size. Listing reads no file (the extension forbids fetching
//! ahead of need). Reading one file checks it against the entry the host holds: a file the
//! entry does not list is refused before anything is sent; content whose size or digest
//! differs from the entry's, or a `SKILL.md` whose frontmatter differs from the entry's, is
//! refused with PROTOCOL_ERROR and never handed to the host.

use super::{Client, RequestOptions};
use crate::error::{Error, Result, Status};
use crate::protocol::base64::decode_base64;
use crate::protocol::frontmatter;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::collections::HashSet;

/// The extension's identifier, under the server's `capabilities.extensions`.
pub const SKILLS_EXTENSION: &str = "io.modelcontextprotocol/skills";
const SKILLS_LIST: &str = "skills/list";

impl Client {
    /// Every skill entry the server lists (`skills/list`, over all pages). NOT_SUPPORTED,
    /// with nothing sent, when the connected server did not declare the extension.
    pub fn skills(&self, opts: &RequestOptions) -> Result<Vec<Value>> {
        self.require_skills_extension()?;
        let mut skills = Vec::new();
        let mut cursor: Option<String> = None;
        let mut seen = HashSet::new();
        for _ in 0..self.core.options.max_pages {
            let params = cursor.as_ref().map(|c| json!({ "cursor": c }));
            let mut page = self.request(SKILLS_LIST, params, opts)?;
            match page.get_mut("skills").map(Value::take) {
                Some(Value::Array(entries)) => skills.extend(entries),
                None | Some(Value::Null) => {}
                Some(_) => return Err(Error::protocol("skills/list: `skills` is not an array")),
            }
            cursor = match page.get("nextCursor") {
                None | Some(Value::Null) => return Ok(skills),
                Some(Value::String(next)) if seen.insert(next.clone()) => Some(next.clone()),
                // A cursor seen before: a server that loops; what we have is the listing.
                Some(Value::String(_)) => return Ok(skills),
                Some(_) => return Err(Error::protocol("skills/list: nextCursor is not a string")),
            };
        }
        Err(Error::new(
            Status::PaginationLimit,
            format!(
                "skills/list: the server returned more than {} pages; raise max_pages if this is expected",
                self.core.options.max_pages
            ),
        ))
    }

    /// Reads one file of a skill (`resources/read`) and verifies it against `skill`, the
    /// skill's entry as `skills/list` gave it. `uri` is the file (None: the skill's
    /// `SKILL.md`); it must be listed in the entry's `resources`. Returns the read's result
    /// once the content matched the entry's size and digest and, for `SKILL.md`, its
    /// frontmatter. A skill whose `resources` is `"dynamic"` has no digests: only the
    /// frontmatter is checked.
    pub fn read_skill(
        &self,
        skill: &Value,
        uri: Option<&str>,
        opts: &RequestOptions,
    ) -> Result<Value> {
        let entry = Entry::of(skill)?;
        let uri = uri.unwrap_or(entry.uri);
        let expected = entry.file(uri)?;
        let result = self.read_resource(uri, opts)?;
        let bytes = content_bytes(&result, uri)?;
        if let Some(expected) = expected {
            expected.verify(uri, &bytes)?;
        }
        if uri == entry.uri {
            entry.verify_frontmatter(&bytes)?;
        }
        Ok(result)
    }

    fn require_skills_extension(&self) -> Result<()> {
        // Before a (lazy) connect the capabilities are unknown: the request finds out.
        let Some(capabilities) = self.server_capabilities() else {
            return Ok(());
        };
        match capabilities
            .get("extensions")
            .and_then(|e| e.get(SKILLS_EXTENSION))
        {
            Some(_) => Ok(()),
            None => Err(Error::new(
                Status::NotSupported,
                format!("the server does not declare the {SKILLS_EXTENSION} extension"),
            )),
        }
    }
}

/// A skill entry, checked for the shape the extension gives it.
struct Entry<'a> {
    uri: &'a str,
    frontmatter: &'a serde_json::Map<String, Value>,
    /// None: `"dynamic"` (no digests).
    files: Option<Vec<FileEntry<'a>>>,
}

/// One file of an entry's `resources`.
struct FileEntry<'a> {
    uri: &'a str,
    digest: &'a str,
    size: u64,
}

impl<'a> Entry<'a> {
    fn of(skill: &'a Value) -> Result<Entry<'a>> {
        let invalid = |why: &str| Error::invalid(format!("the skill entry {why}"));
        let uri = skill
            .get("uri")
            .and_then(Value::as_str)
            .ok_or_else(|| invalid("has no string `uri`"))?;
        let frontmatter = skill
            .get("frontmatter")
            .and_then(Value::as_object)
            .ok_or_else(|| invalid("has no `frontmatter` object"))?;
        let files = match skill.get("resources") {
            Some(Value::String(dynamic)) if dynamic == "dynamic" => None,
            Some(Value::Array(files)) => Some(
                files
                    .iter()
                    .map(FileEntry::of)
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(|| {
                        invalid(
                            "has a `resources` item without a string uri, sha256 digest and size",
                        )
                    })?,
            ),
            _ => return Err(invalid("has no `resources` array (nor \"dynamic\")")),
        };
        Ok(Entry {
            uri,
            frontmatter,
            files,
        })
    }

    /// The entry's record of `uri` (None for a dynamic skill); an unlisted file is refused.
    fn file(&self, uri: &str) -> Result<Option<&FileEntry<'a>>> {
        let Some(files) = &self.files else {
            return Ok(None);
        };
        match files.iter().find(|f| f.uri == uri) {
            Some(file) => Ok(Some(file)),
            None => Err(Error::invalid(format!(
                "{uri} is not listed in the resources of the skill {}",
                self.uri
            ))),
        }
    }

    /// The `SKILL.md` frontmatter must equal the entry's, field by field.
    fn verify_frontmatter(&self, bytes: &[u8]) -> Result<()> {
        let mismatch = |why: String| {
            Error::protocol(format!(
                "skill {}: the SKILL.md frontmatter does not match the skill's entry: {why}",
                self.uri
            ))
        };
        let text = std::str::from_utf8(bytes).map_err(|_| mismatch("not UTF-8 text".into()))?;
        let read = frontmatter::parse(text).map_err(mismatch)?;
        for (key, value) in self.frontmatter {
            match read.get(key) {
                Some(found) if same(found, value) => {}
                Some(_) => return Err(mismatch(format!("`{key}` differs"))),
                None => return Err(mismatch(format!("`{key}` is missing from the file"))),
            }
        }
        match read.keys().find(|key| !self.frontmatter.contains_key(*key)) {
            Some(key) => Err(mismatch(format!("`{key}` is not in the entry"))),
            None => Ok(()),
        }
    }
}

impl<'a> FileEntry<'a> {
    fn of(file: &'a Value) -> Option<FileEntry<'a>> {
        let digest = file.get("digest")?.as_str()?;
        let hex = digest.strip_prefix("sha256:")?;
        let lower_hex = |b: u8| b.is_ascii_digit() || (b'a'..=b'f').contains(&b);
        (hex.len() == 64 && hex.bytes().all(lower_hex)).then_some(())?;
        Some(FileEntry {
            uri: file.get("uri")?.as_str()?,
            digest,
            size: file.get("size")?.as_u64()?,
        })
    }

    /// The size first (cheap, and a mismatch whatever the digest), then the digest.
    fn verify(&self, uri: &str, bytes: &[u8]) -> Result<()> {
        if bytes.len() as u64 != self.size {
            return Err(Error::protocol(format!(
                "skill file {uri}: {} bytes read, the skill's entry says {}",
                bytes.len(),
                self.size
            )));
        }
        let digest = format!("sha256:{}", hex(&Sha256::digest(bytes)));
        if digest != self.digest {
            return Err(Error::protocol(format!(
                "skill file {uri}: its SHA-256 digest is not the one the skill's entry gives"
            )));
        }
        Ok(())
    }
}

/// The raw bytes of the read's content for `uri`: its `text` as UTF-8, or its `blob` decoded.
fn content_bytes(result: &Value, uri: &str) -> Result<Vec<u8>> {
    let contents = result
        .get("contents")
        .and_then(Value::as_array)
        .ok_or_else(|| Error::protocol(format!("resources/read {uri}: no `contents` array")))?;
    let mut matching = contents
        .iter()
        .filter(|c| c.get("uri").and_then(Value::as_str) == Some(uri));
    let content = match (matching.next(), matching.next()) {
        (Some(content), None) => content,
        (None, _) => {
            return Err(Error::protocol(format!(
                "resources/read {uri}: no content for that uri"
            )))
        }
        (Some(_), Some(_)) => {
            return Err(Error::protocol(format!(
                "resources/read {uri}: more than one content for that uri"
            )))
        }
    };
    match (content.get("text"), content.get("blob")) {
        (Some(Value::String(text)), None) => Ok(text.as_bytes().to_vec()),
        (None, Some(Value::String(blob))) => decode_base64(blob).ok_or_else(|| {
            Error::protocol(format!("resources/read {uri}: the blob is not base64"))
        }),
        _ => Err(Error::protocol(format!(
            "resources/read {uri}: the content has neither a string `text` nor a `blob`"
        ))),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// JSON equality where numbers compare by value (YAML's `1.0` and the entry's `1`).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x == y || x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}
