//! A stdio server that sends log notifications as fast as it can, for 10 s, to a client whose
//! log callback is slow (as a host's may be): the callback queue is bounded, so memory stays
//! bounded and close stays quick. Alone in its test binary so that the memory figures are this
//! test's only.

mod common;

use common::flood::{status_kib, survive};
use mcpc::handlers::{Callbacks, LogMessage};
use mcpc::ClientOptions;
use std::sync::Arc;
use std::time::Duration;

#[test]
fn a_notification_flood_with_a_slow_callback_cannot_exhaust_memory() {
    let baseline = status_kib("VmRSS");
    let options = ClientOptions {
        callbacks: Callbacks {
            on_message: Some(Arc::new(|_: &LogMessage| {
                std::thread::sleep(Duration::from_micros(200));
            })),
            ..Callbacks::default()
        },
        ..ClientOptions::default()
    };
    let config = common::config(&["--flood", "notifications/message", "--flood-secs", "10"]);
    let client = common::connect_with(config, options);
    survive("stdio notification flood, slow callback", client, baseline);
}
