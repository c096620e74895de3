//! The seed file: consumers and elements registered at start, so that a
//! production-mode server can be tried locally without the admin command.
//!
//! ```json
//! {
//!   "consumers": [{"id": "…uuid…", "name": "Zentrale", "secrets": ["…"], "allow_sha1": false}],
//!   "elements":  [{"address": "00:11:22:33:44:55", "code": "Z101", "name": "Zimmer 101"}]
//! }
//! ```
//! Consumers that exist already keep their record; elements get the code and
//! name from the file and keep their status.

use std::path::Path;

use serde::Deserialize;

use nurse_call_core::{Backend, Consumer, Scope, clock, is_uuid};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SeedFile {
    #[serde(default)]
    consumers: Vec<SeedConsumer>,
    #[serde(default)]
    elements: Vec<SeedElement>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SeedConsumer {
    id: String,
    name: String,
    secrets: Vec<String>,
    #[serde(default)]
    allow_sha1: bool,
    /// Replay protection (docs/security.md); off unless set.
    #[serde(default)]
    require_signed_time: bool,
    /// Its heartbeat interval in seconds (DECISIONS §19), 30 to 3600 as
    /// the admin command's `--heartbeat`; none by default.
    #[serde(default)]
    heartbeat_seconds: Option<i64>,
    /// With a heartbeat: the last sign of life it starts from (RFC 3339,
    /// not in the future), as if the consumer had last been heard then;
    /// the seed's own time by default. Lets a test see a silence seconds
    /// after the start instead of 2 × 30 s + 10 s.
    #[serde(default)]
    heartbeat_last_seen: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SeedElement {
    address: String,
    #[serde(default)]
    code: String,
    #[serde(default)]
    name: String,
}

pub(crate) async fn apply(store: &dyn Backend, path: &Path) -> Result<(), String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read seed file {}: {e}", path.display()))?;
    let seed: SeedFile = serde_json::from_str(&text)
        .map_err(|e| format!("seed file {} is not valid: {e}", path.display()))?;
    let now = clock::now();
    for entry in &seed.consumers {
        if !is_uuid(&entry.id) {
            return Err(format!("seed consumer id {:?} is not a UUID", entry.id));
        }
        if entry.secrets.is_empty() || entry.secrets.len() > 2 {
            return Err(format!(
                "seed consumer {} needs one or two secrets",
                entry.id
            ));
        }
        let id = entry.id.to_ascii_lowercase();
        if store
            .consumer(&id)
            .await
            .map_err(|e| e.to_string())?
            .is_some()
        {
            continue;
        }
        let consumer = Consumer {
            id,
            name: entry.name.clone(),
            secrets: entry.secrets.clone(),
            allow_sha1: entry.allow_sha1,
            created_at: now,
            expires_at: None,
            require_signed_time: entry.require_signed_time,
            heartbeat_seconds: None,
        };
        store
            .create_consumer(&consumer)
            .await
            .map_err(|e| e.to_string())?;
        if let Some(seconds) = entry.heartbeat_seconds {
            if !nurse_call_core::links::is_heartbeat_interval(seconds) {
                return Err(format!(
                    "seed consumer {}: heartbeat_seconds must be 30 to 3600",
                    consumer.id
                ));
            }
            let last_seen = match &entry.heartbeat_last_seen {
                None => now,
                Some(text) => chrono::DateTime::parse_from_rfc3339(text)
                    .ok()
                    .map(|at| at.with_timezone(&chrono::Utc))
                    .filter(|at| *at <= now)
                    .ok_or_else(|| {
                        format!(
                            "seed consumer {}: heartbeat_last_seen must be an RFC 3339 time, not in the future",
                            consumer.id
                        )
                    })?,
            };
            store
                .set_heartbeat(&consumer.id, Some(seconds), last_seen)
                .await
                .map_err(|e| e.to_string())?;
        }
    }
    for element in &seed.elements {
        store
            .register_element(
                &Scope::installation(),
                &element.address,
                &element.code,
                &element.name,
                now,
            )
            .await
            .map_err(|e| e.to_string())?;
    }
    tracing::info!(
        consumers = seed.consumers.len(),
        elements = seed.elements.len(),
        file = %path.display(),
        "seed file applied"
    );
    Ok(())
}
