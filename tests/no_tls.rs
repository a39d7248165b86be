//! A build without the `tls` cargo feature (`cargo test --no-default-features --test no_tls`):
//! https fails at connect with NOT_SUPPORTED and a message naming the feature, and so does
//! every TLS setting when it is set. In the default build this file has no tests.
#![cfg(not(feature = "tls"))]

use mcpc::{Client, ClientOptions, HttpConfig, Status};

#[test]
fn an_https_url_fails_at_connect_with_not_supported() {
    // Nothing listens there: the check comes before any connection is tried.
    let client = Client::http(
        HttpConfig::new("https://127.0.0.1:9/mcp"),
        ClientOptions::default(),
    );
    let error = client.connect().unwrap_err();
    assert_eq!(error.status, Status::NotSupported, "{error:?}");
    assert!(error.message.contains("`tls`"), "{}", error.message);
}

#[test]
fn an_https_proxy_fails_at_connect_with_not_supported() {
    let mut config = HttpConfig::new("http://127.0.0.1:9/mcp");
    config.set_proxy(Some("https://127.0.0.1:9")).unwrap();
    let error = Client::http(config, ClientOptions::default())
        .connect()
        .unwrap_err();
    assert_eq!(error.status, Status::NotSupported, "{error:?}");
}

#[test]
fn tls_settings_fail_with_not_supported() {
    let mut config = HttpConfig::new("http://127.0.0.1:9/mcp");
    let pem = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
    for error in [
        config.add_ca_pem(pem).unwrap_err(),
        config.add_ca_dir(std::env::temp_dir()).unwrap_err(),
        config.set_client_cert_pem(pem, pem).unwrap_err(),
    ] {
        assert_eq!(error.status, Status::NotSupported, "{error:?}");
        assert!(error.message.contains("`tls`"), "{}", error.message);
    }
}
