//! Where to get a token: the MCP server's Protected Resource Metadata (RFC 9728) and its
//! authorization server's metadata (RFC 8414, OpenID Connect discovery), each tried at the
//! well-known places in the spec's order, with the checks that keep a hostile document out
//! (the resource must be this server, the issuer the one asked for, endpoints HTTPS).

use super::challenge::Challenge;
use super::form::{failed, get_json, origin, parts, require_secure, Fetched};
use crate::display_url::display_url;
use crate::error::Result;
use serde_json::Value;

/// RFC 9728 metadata of the MCP server.
#[derive(Debug, Clone)]
pub struct ResourceMetadata {
    pub resource: String,
    pub authorization_servers: Vec<String>,
    pub scopes_supported: Option<Vec<String>>,
}

/// RFC 8414 metadata of an authorization server (what the flow uses of it).
#[derive(Debug, Clone)]
pub struct ServerMetadata {
    pub issuer: String,
    pub authorization_endpoint: Option<String>,
    pub token_endpoint: String,
    pub registration_endpoint: Option<String>,
    pub scopes_supported: Option<Vec<String>>,
    pub token_endpoint_auth_methods: Option<Vec<String>>,
    pub code_challenge_methods: Option<Vec<String>>,
    pub client_id_metadata_document_supported: bool,
    /// RFC 9207: the redirect carries `iss`, and a redirect without it is refused.
    pub iss_parameter_supported: bool,
    /// Made up from the 2025-03-26 default paths: no metadata document was found.
    pub fallback: bool,
}

/// The MCP server's metadata: at the challenge's `resource_metadata` URL, else path-based
/// well-known then root well-known. `None` when the server publishes none (2025-03-26 era).
pub fn resource_metadata(
    agent: &ureq::Agent,
    server_url: &str,
    challenge: &Challenge,
) -> Result<Option<ResourceMetadata>> {
    let mut candidates = Vec::new();
    if let Some(url) = &challenge.resource_metadata {
        require_same_scheme_rules(url)?;
        candidates.push(url.clone());
    } else {
        let base = origin(server_url).ok_or_else(|| failed("the server URL has no origin"))?;
        let path = parts(server_url).map(|p| p.path).unwrap_or_default();
        let path = path.trim_end_matches('/');
        if !path.is_empty() {
            candidates.push(format!("{base}/.well-known/oauth-protected-resource{path}"));
        }
        candidates.push(format!("{base}/.well-known/oauth-protected-resource"));
    }
    let Some((url, document)) = first_document(agent, candidates)? else {
        return Ok(None);
    };
    let metadata = parse_resource(&document).ok_or_else(|| {
        failed(format!(
            "the protected resource metadata at {} has no resource or no \
             authorization_servers",
            display_url(&url)
        ))
    })?;
    check_resource(server_url, &metadata.resource)?;
    Ok(Some(metadata))
}

/// The first of `candidates` that holds a document, with its URL; `None` when none does. A
/// redirect is no proof that there is no document: when one was met and no document was
/// found, its error rather than a guess.
fn first_document(agent: &ureq::Agent, candidates: Vec<String>) -> Result<Option<(String, Value)>> {
    let mut redirect = None;
    for url in candidates {
        match get_json(agent, &url)? {
            Fetched::Document(document) => return Ok(Some((url, document))),
            Fetched::Absent => {}
            Fetched::Redirected(error) => {
                redirect.get_or_insert(error);
            }
        }
    }
    match redirect {
        Some(error) => Err(error),
        None => Ok(None),
    }
}

/// A `resource_metadata` URL must be one we may fetch: https, or http on loopback.
fn require_same_scheme_rules(url: &str) -> Result<()> {
    require_secure(url, "resource metadata URL")
}

fn parse_resource(document: &Value) -> Option<ResourceMetadata> {
    let resource = document.get("resource")?.as_str()?.to_owned();
    let authorization_servers: Vec<String> = strings(document.get("authorization_servers"))?;
    if authorization_servers.is_empty() {
        return None;
    }
    Some(ResourceMetadata {
        resource,
        authorization_servers,
        scopes_supported: strings(document.get("scopes_supported")),
    })
}

/// The metadata's `resource` must name this server: same scheme, host and port, and a path
/// that is the server's or a parent of it (RFC 9728 section 3.3; the MCP spec's canonical
/// server URI). Anything else is another server's metadata.
pub fn check_resource(server_url: &str, resource: &str) -> Result<()> {
    let matches = match (parts(server_url), parts(resource)) {
        (Some(server), Some(resource)) => {
            let server_path = server.path.trim_end_matches('/');
            let resource_path = resource.path.trim_end_matches('/');
            server.scheme == resource.scheme
                && server.host == resource.host
                && server.port == resource.port
                && (server_path == resource_path
                    || server_path.starts_with(&format!("{resource_path}/")))
        }
        _ => false,
    };
    match matches {
        true => Ok(()),
        false => Err(failed(format!(
            "the protected resource metadata names another resource ({}), not this server \
             ({}); not authorizing",
            display_url(resource),
            display_url(server_url)
        ))),
    }
}

/// The authorization server's metadata, from the well-known URLs of its issuer in the spec's
/// order. The document's `issuer` must be exactly the one asked for.
pub fn server_metadata(agent: &ureq::Agent, issuer: &str, legacy: bool) -> Result<ServerMetadata> {
    require_secure(issuer, "authorization server")?;
    let base = origin(issuer).ok_or_else(|| failed("the authorization server URL is invalid"))?;
    let path = parts(issuer).map(|p| p.path).unwrap_or_default();
    let path = path.trim_end_matches('/');
    let candidates = if path.is_empty() {
        vec![
            format!("{base}/.well-known/oauth-authorization-server"),
            format!("{base}/.well-known/openid-configuration"),
        ]
    } else {
        vec![
            format!("{base}/.well-known/oauth-authorization-server{path}"),
            format!("{base}/.well-known/openid-configuration{path}"),
            format!("{base}{path}/.well-known/openid-configuration"),
        ]
    };
    if let Some((url, document)) = first_document(agent, candidates)? {
        let found = document.get("issuer").and_then(Value::as_str);
        if let (true, Some(found)) = (legacy, found) {
            if found != issuer && same_origin_issuer(found, &base) {
                // 2025-03-26 derives the authorization server from the MCP server's origin,
                // where this document was found; an issuer under that same origin (an
                // authorization server mounted at a path) is the same party, and the one
                // the redirect's `iss` must then name.
                return parse_server(&document, found);
            }
        }
        if found != Some(issuer) {
            return Err(failed(format!(
                "the authorization server metadata at {} names another issuer ({}); not \
                 using it",
                display_url(&url),
                found.map_or_else(|| "none".to_owned(), display_url)
            )));
        }
        return parse_server(&document, issuer);
    }
    if legacy {
        // 2025-03-26: no metadata at all, the default endpoints at the server's root.
        return Ok(ServerMetadata {
            issuer: issuer.to_owned(),
            authorization_endpoint: Some(format!("{base}/authorize")),
            token_endpoint: format!("{base}/token"),
            registration_endpoint: Some(format!("{base}/register")),
            scopes_supported: None,
            token_endpoint_auth_methods: None,
            code_challenge_methods: None,
            client_id_metadata_document_supported: false,
            iss_parameter_supported: false,
            fallback: true,
        });
    }
    Err(failed(format!(
        "the authorization server {} publishes no metadata",
        display_url(issuer)
    )))
}

/// An issuer URL whose origin is `base` (an https URL, or http on loopback).
fn same_origin_issuer(issuer: &str, base: &str) -> bool {
    require_secure(issuer, "authorization server").is_ok()
        && origin(issuer).is_some_and(|found| found.eq_ignore_ascii_case(base))
        && !issuer.contains(['?', '#'])
}

fn parse_server(document: &Value, issuer: &str) -> Result<ServerMetadata> {
    let text = |name: &str| {
        document
            .get(name)
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    let token_endpoint = text("token_endpoint")
        .ok_or_else(|| failed("the authorization server metadata has no token_endpoint"))?;
    let authorization_endpoint = text("authorization_endpoint");
    let registration_endpoint = text("registration_endpoint");
    require_secure(&token_endpoint, "token endpoint")?;
    if let Some(url) = &authorization_endpoint {
        require_secure(url, "authorization endpoint")?;
    }
    if let Some(url) = &registration_endpoint {
        require_secure(url, "registration endpoint")?;
    }
    let flag = |name: &str| document.get(name).and_then(Value::as_bool) == Some(true);
    Ok(ServerMetadata {
        issuer: issuer.to_owned(),
        authorization_endpoint,
        token_endpoint,
        registration_endpoint,
        scopes_supported: strings(document.get("scopes_supported")),
        token_endpoint_auth_methods: strings(document.get("token_endpoint_auth_methods_supported")),
        code_challenge_methods: strings(document.get("code_challenge_methods_supported")),
        client_id_metadata_document_supported: flag("client_id_metadata_document_supported"),
        iss_parameter_supported: flag("authorization_response_iss_parameter_supported"),
        fallback: false,
    })
}

fn strings(value: Option<&Value>) -> Option<Vec<String>> {
    Some(
        value?
            .as_array()?
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
    )
}

/// The issuer of a server that publishes no resource metadata (2025-03-26): its origin.
pub fn legacy_issuer(server_url: &str) -> Result<String> {
    origin(server_url).ok_or_else(|| failed("the server URL has no origin"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_resource_must_be_this_server_or_a_parent() {
        let server = "http://localhost:3000/mcp";
        assert!(check_resource(server, "http://localhost:3000/mcp").is_ok());
        assert!(check_resource(server, "http://localhost:3000").is_ok());
        assert!(check_resource(server, "http://LOCALHOST:3000/").is_ok());
        assert!(check_resource(server, "https://evil.example.com/mcp").is_err());
        assert!(check_resource(server, "http://localhost:3001/mcp").is_err());
        assert!(check_resource(server, "http://localhost:3000/mcp-other").is_err());
        assert!(check_resource(server, "http://localhost:3000/mcp/sub").is_err());
    }
}
