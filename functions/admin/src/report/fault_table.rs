//! The HTML report's faults (Störungen, call types of `type` `FAULT`): apart
//! from the calls, since a broken device is no request for care; per fault
//! type how many came, how many are open, how long they took to close.

use maud::{Markup, html};

use nurse_call_core::report::FaultReport;

use super::alarm_tables::times;

pub(super) fn section(faults: &FaultReport) -> Markup {
    html! {
        section.keep {
            h2 { "Störungen" }
            @if faults.total.count == 0 {
                p.empty { "Keine Störungen im Zeitraum." }
            } @else {
                table {
                    thead { tr {
                        th { "Störungsart" } th.number { "Störungen" } th.number { "offen" }
                        th.number { "bis Ende" }
                    } }
                    tbody {
                        @for group in &faults.by_fault_type {
                            tr {
                                td { (group.name) }
                                td.number { (group.stats.count) }
                                td.number { (group.stats.open) }
                                td.number { (times(&group.stats.to_close)) }
                            }
                        }
                    }
                }
                p.note {
                    "Nicht in den Reaktionszeiten und der Alarmierung der Rufe enthalten. "
                    "Bis Ende: vom Beginn bis zum Ende der Störung als Median · p90 · Maximum, "
                    "in Klammern die Zahl der beendeten Störungen."
                }
            }
        }
    }
}
