//! An HTTP reader's reqwest client, made again by `close_idle` so that the
//! idle connections of its pool close when an epoch closes (a `break`, a
//! `close()`), as the reference's `aclose` closes its own; reqwest has no call
//! to empty a pool. Requests in flight keep the client they started on.

use std::sync::{Arc, RwLock};

use reqwest::header::{HeaderMap, HeaderValue};
use reqwest::Client;

use crate::connections::CountConnects;
use crate::stall::StallLayer;
use crate::Counters;

pub struct Clients {
    current: RwLock<Client>,
    max_connections: usize,
    stall: StallLayer,
    counters: Arc<Counters>,
}

impl Clients {
    pub fn new(
        max_connections: usize,
        stall: StallLayer,
        counters: Arc<Counters>,
    ) -> Result<Clients, String> {
        let current = RwLock::new(build(max_connections, &stall, &counters)?);
        Ok(Clients {
            current,
            max_connections,
            stall,
            counters,
        })
    }

    pub fn get(&self) -> Client {
        self.current
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// A new client in place of the current one: the old pool, and with it the
    /// idle connections, go once the requests still on it end.
    pub fn close_idle(&self) {
        if let Ok(client) = build(self.max_connections, &self.stall, &self.counters) {
            *self.current.write().unwrap_or_else(|e| e.into_inner()) = client;
        }
    }
}

fn build(
    max_connections: usize,
    stall: &StallLayer,
    counters: &Arc<Counters>,
) -> Result<Client, String> {
    let mut identity = HeaderMap::new();
    identity.insert("accept-encoding", HeaderValue::from_static("identity"));
    // `attempt` follows redirects (reqwest would send our headers and a Referer on).
    Client::builder()
        .default_headers(identity)
        .pool_max_idle_per_host(max_connections)
        .redirect(reqwest::redirect::Policy::none())
        .referer(false)
        .tls_built_in_webpki_certs(false) // the reference's roots alone: system or SSL_CERT_FILE
        .connector_layer(stall.clone())
        .connector_layer(CountConnects::on(counters))
        .build()
        .map_err(|e| e.to_string())
}
