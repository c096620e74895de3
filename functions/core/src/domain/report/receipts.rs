//! Per person, how reliably alerts reach their phone (DECISIONS §18): of the
//! calls that alerted them, how many they received (a receipt from a phone,
//! a page or a handset) within `RECEIPT_SECONDS` of their first alert. A
//! care home reads a low share as a phone to look at (notifications off,
//! battery optimisation, an iPhone without the page on its home screen),
//! not as a person who did not care: a receipt comes before anybody reads
//! the alert.

use chrono::Duration;
use serde::Serialize;

use super::ReportedCall;

/// One person's receipts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PersonReceipts {
    /// The staff member's id.
    pub id: String,
    /// Their name as the newest of their alarms kept it.
    pub name: String,
    /// Calls that alerted them.
    pub alerted: usize,
    /// Of those, calls they received within `RECEIPT_SECONDS`.
    pub received_in_time: usize,
    /// `received_in_time` of `alerted` in whole percent (rounded down).
    pub share_percent: u32,
}

/// Everyone the measured calls alerted, by name (then id).
pub(super) fn by_person<'a>(
    calls: impl IntoIterator<Item = &'a ReportedCall>,
    receipt_seconds: i64,
) -> Vec<PersonReceipts> {
    let window = Duration::seconds(receipt_seconds);
    let mut people: Vec<PersonReceipts> = Vec::new();
    for figures in calls
        .into_iter()
        .filter(|c| c.is_measured())
        .filter_map(|c| c.alarm.as_ref())
        .flat_map(|alarm| &alarm.recipients)
    {
        let index = match people.iter().position(|p| p.id == figures.id) {
            Some(index) => index,
            None => {
                people.push(PersonReceipts {
                    id: figures.id.clone(),
                    name: String::new(),
                    alerted: 0,
                    received_in_time: 0,
                    share_percent: 0,
                });
                people.len() - 1
            }
        };
        let person = &mut people[index];
        person.name.clone_from(&figures.name);
        person.alerted += 1;
        if figures.receipt_after.is_some_and(|after| after <= window) {
            person.received_in_time += 1;
        }
    }
    for person in &mut people {
        person.share_percent =
            u32::try_from(person.received_in_time * 100 / person.alerted).unwrap_or(100);
    }
    people.sort_by(|a, b| a.name.cmp(&b.name).then(a.id.cmp(&b.id)));
    people
}
