//! The consistent reads every part of the store builds on: a whole small
//! table (call types, consumers), a data-table partition, an address's
//! snapshot, and the newest entries of a `by_scope` listing. Paged reads use
//! the SDK's paginators; each page is one request (counted like any other).

use nurse_call_core::{AddressSnapshot, Scope, StoreError};

use crate::DynamoStore;
use crate::error::classify;
use crate::item::{
    ELEMENT_SK, Item, OPEN_PREFIX, address_pk, call_from_item, element_from_item, get_s, s,
};
use crate::tables::BY_SCOPE_INDEX;

impl DynamoStore {
    /// Every item of `table` (the small admin tables: call types, consumers).
    pub(crate) async fn scan_table(&self, table: &str) -> Result<Vec<Item>, StoreError> {
        self.client
            .scan()
            .table_name(table)
            .consistent_read(true)
            .into_paginator()
            .items()
            .send()
            .try_collect()
            .await
            .map_err(classify)
    }

    /// Every item of a data-table partition, in sort-key order (consistent).
    pub(crate) async fn query_partition(&self, pk: &str) -> Result<Vec<Item>, StoreError> {
        self.client
            .query()
            .table_name(&self.tables.data)
            .key_condition_expression("pk = :pk")
            .expression_attribute_values(":pk", s(pk))
            .consistent_read(true)
            .into_paginator()
            .items()
            .send()
            .try_collect()
            .await
            .map_err(classify)
    }

    /// The element and the open calls of an address, oldest first, in one
    /// consistent `Query`.
    pub(crate) async fn read_address(
        &self,
        scope: &Scope,
        address: &str,
    ) -> Result<AddressSnapshot, StoreError> {
        let mut snapshot = AddressSnapshot::default();
        for item in self.query_partition(&address_pk(scope, address)).await? {
            match get_s(&item, "sk").as_deref() {
                Some(ELEMENT_SK) => snapshot.element = Some(element_from_item(&item)?),
                Some(sk) if sk.starts_with(OPEN_PREFIX) => {
                    snapshot.open_calls.push(call_from_item(&item)?);
                }
                _ => {}
            }
        }
        snapshot
            .open_calls
            .sort_by(|a, b| a.opened_at.cmp(&b.opened_at).then(a.id.cmp(&b.id)));
        Ok(snapshot)
    }

    /// Every item of a `by_scope` listing (eventually consistent).
    pub(crate) async fn query_list(&self, list_pk: &str) -> Result<Vec<Item>, StoreError> {
        self.client
            .query()
            .table_name(&self.tables.data)
            .index_name(BY_SCOPE_INDEX)
            .key_condition_expression("list_pk = :list_pk")
            .expression_attribute_values(":list_pk", s(list_pk))
            .into_paginator()
            .items()
            .send()
            .try_collect()
            .await
            .map_err(classify)
    }

    /// The newest `limit` items of a `by_scope` listing: one page.
    pub(crate) async fn query_listing(
        &self,
        list_pk: &str,
        limit: usize,
    ) -> Result<Vec<Item>, StoreError> {
        // DynamoDB rejects `Limit = 0`.
        if limit == 0 {
            return Ok(Vec::new());
        }
        let page = self
            .client
            .query()
            .table_name(&self.tables.data)
            .index_name(BY_SCOPE_INDEX)
            .key_condition_expression("list_pk = :list_pk")
            .expression_attribute_values(":list_pk", s(list_pk))
            .scan_index_forward(false)
            .limit(i32::try_from(limit).unwrap_or(i32::MAX))
            .send()
            .await
            .map_err(classify)?;
        Ok(page.items.unwrap_or_default())
    }
}
