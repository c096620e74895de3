//! A credential that stopped working (DECISIONS §20: `staff rotate`,
//! `staff revoke`, `staff erase`, `displays rotate`, `displays revoke`):
//! its open live connections must close within 5 s. The WebSocket API's
//! connections are closed by the `broadcast` function, which reads the data
//! table's stream; display credentials live in the consumers table, which
//! has none. So each such write puts, in the same transaction, a marker
//! item in the data table:
//!
//! `pk` `credential#gone`, `sk` `<staff|display>#<id>#<unix ms>#<random>`
//! (two rotations in one millisecond are two markers), `scope`,
//! `staff_id` or `display_id`, `ttl` an hour later.
//!
//! Its `INSERT` on the stream is what `broadcast` acts on (it closes the
//! holder's connections with `DeleteConnection`); the item itself is never
//! read and expires.

use aws_sdk_dynamodb::types::{Put, TransactWriteItem};
use chrono::{DateTime, Duration, Utc};

use nurse_call_core::{Scope, StoreError};

use crate::DynamoStore;
use crate::error::build_error;
use crate::item::{Item, get_s, n, s};

/// The marker items' partition.
pub const CREDENTIAL_GONE_PK: &str = "credential#gone";

/// Whose credential stopped working.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Holder {
    /// A staff member (their staff pages).
    Staff(String),
    /// A display.
    Display(String),
}

/// A credential that stopped working, and whose connections to close.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CredentialGone {
    /// The holder's scope (the connections table's partition).
    pub scope: Scope,
    /// Whose connections.
    pub holder: Holder,
}

impl CredentialGone {
    /// The marker item of this credential, written at `at`; `nonce` keeps
    /// two markers of one millisecond apart.
    pub fn item(&self, at: DateTime<Utc>, nonce: u32) -> Item {
        let (kind, attribute, id) = match &self.holder {
            Holder::Staff(id) => ("staff", "staff_id", id),
            Holder::Display(id) => ("display", "display_id", id),
        };
        Item::from([
            ("pk".to_string(), s(CREDENTIAL_GONE_PK)),
            (
                "sk".to_string(),
                s(format!("{kind}#{id}#{}#{nonce:08x}", at.timestamp_millis())),
            ),
            ("scope".to_string(), s(self.scope.as_str())),
            (attribute.to_string(), s(id)),
            ("ttl".to_string(), n((at + Duration::hours(1)).timestamp())),
        ])
    }

    /// The marker an item is, if it is one (a stream record's new image).
    pub fn from_item(item: &Item) -> Option<CredentialGone> {
        if get_s(item, "pk").as_deref() != Some(CREDENTIAL_GONE_PK) {
            return None;
        }
        let scope = Scope::from_key(&get_s(item, "scope")?);
        let holder = match (get_s(item, "staff_id"), get_s(item, "display_id")) {
            (Some(staff_id), None) => Holder::Staff(staff_id),
            (None, Some(display_id)) => Holder::Display(display_id),
            _ => return None,
        };
        Some(CredentialGone { scope, holder })
    }
}

impl DynamoStore {
    /// The put of `gone`'s marker, now, for the caller's transaction.
    pub(crate) fn credential_gone_put(
        &self,
        gone: CredentialGone,
    ) -> Result<TransactWriteItem, StoreError> {
        let mut nonce = [0u8; 4];
        getrandom::fill(&mut nonce).map_err(|e| StoreError::Internal(e.to_string()))?;
        let put = Put::builder()
            .table_name(&self.tables.data)
            .set_item(Some(gone.item(Utc::now(), u32::from_le_bytes(nonce))))
            .build()
            .map_err(build_error)?;
        Ok(TransactWriteItem::builder().put(put).build())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_marker_names_its_holder_and_scope_and_is_read_back() {
        let at = DateTime::from_timestamp(1_800_000_000, 0).unwrap();
        for holder in [Holder::Staff("s-1".into()), Holder::Display("d-1".into())] {
            let gone = CredentialGone {
                scope: Scope::installation(),
                holder,
            };
            let item = gone.item(at, 7);
            assert_eq!(CredentialGone::from_item(&item), Some(gone));
            assert_eq!(get_s(&item, "pk").as_deref(), Some(CREDENTIAL_GONE_PK));
        }
        let mut other = CredentialGone {
            scope: Scope::installation(),
            holder: Holder::Staff("s-1".into()),
        }
        .item(at, 7);
        other.insert("pk".into(), s("staff#installation"));
        assert_eq!(CredentialGone::from_item(&other), None);
    }
}
