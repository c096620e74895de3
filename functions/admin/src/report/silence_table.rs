//! The HTML report's silences (DECISIONS §19): each time a central system
//! was silent in the period, with its start, its end and its length, so
//! that calls missing from the figures can be told from a quiet night.

use chrono_tz::Tz;
use maud::{Markup, html};

use nurse_call_core::{report::ReportedSilence, wire_time::format_local};

use super::duration::minutes;

pub(super) fn section(silences: &[ReportedSilence], zone: Tz) -> Markup {
    html! {
        section.keep {
            h2 { "Verbindung zur Rufanlage unterbrochen" }
            @if silences.is_empty() {
                p.empty { "Keine Unterbrechung im Zeitraum." }
            } @else {
                table {
                    thead { tr {
                        th { "Beginn" } th { "Ende" } th.number { "Dauer" } th { "Rufanlage" }
                    } }
                    tbody {
                        @for silence in silences {
                            tr {
                                td { (format_local(silence.since, zone)) }
                                td { (silence.ended_at.map_or_else(|| "dauert an".to_string(), |at| format_local(at, zone))) }
                                td.number { (silence.length_seconds.map_or_else(|| "–".to_string(), minutes)) }
                                td { (silence.name) }
                            }
                        }
                    }
                }
                p.note {
                    "Beginn: die letzte Anfrage der Rufanlage vor der Unterbrechung; erkannt wird sie "
                    "nach dem Doppelten ihres Herzschlag-Intervalls und 10 s. Rufe dieser Zeit "
                    "fehlen in den Zahlen oben."
                }
            }
        }
    }
}
