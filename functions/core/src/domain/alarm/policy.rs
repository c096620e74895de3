//! The escalation policy of a call type (DECISIONS §14): who is alerted, and
//! when more people are. A list of levels, each starting a number of seconds
//! after the call was opened; the first starts at once. An empty list means
//! no alarm (presence).

use std::fmt;

use serde::{Deserialize, Serialize};

/// Who a level alerts.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Audience {
    /// Staff on duty for the call's section, or for the whole house.
    Section,
    /// Everyone on duty.
    House,
    /// Members of a group, on duty or not.
    Group(String),
}

impl Audience {
    /// `section`, `house` or `group:<name>`.
    pub fn parse(text: &str) -> Result<Self, String> {
        match text {
            "section" => Ok(Audience::Section),
            "house" => Ok(Audience::House),
            _ => match text.strip_prefix("group:") {
                Some(name) if !name.trim().is_empty() && name.trim() == name => {
                    Ok(Audience::Group(name.to_string()))
                }
                Some(_) => Err(format!("\"{text}\": a group needs a name")),
                None => Err(format!("\"{text}\" is not section, house or group:<name>")),
            },
        }
    }
}

impl fmt::Display for Audience {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Audience::Section => f.write_str("section"),
            Audience::House => f.write_str("house"),
            Audience::Group(name) => write!(f, "group:{name}"),
        }
    }
}

/// One level: `to` is alerted from `after` seconds since the call's `opened_at`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Level {
    /// Seconds from the call's `opened_at` until the level starts (0 for
    /// the first).
    pub after: i64,
    /// Who the level alerts.
    pub to: Audience,
}

/// The levels of a call type, in order of `after`; empty: no alarm.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Policy {
    levels: Vec<Level>,
}

/// The stored and admin-given form: `[{"after":0,"to":"section"}, …]`.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct LevelJson {
    after: serde_json::Value,
    to: String,
}

/// The longest wait a level may have: a week. A later one is a typo.
pub(crate) const MAX_AFTER: i64 = 7 * 24 * 3600;
/// More levels than anybody configures; keeps a call's alarm small.
pub(crate) const MAX_LEVELS: usize = 10;

impl Policy {
    /// The policy of `levels` when they are valid (see [`Policy::parse`]).
    pub fn new(levels: Vec<Level>) -> Result<Self, String> {
        if levels.len() > MAX_LEVELS {
            return Err(format!("at most {MAX_LEVELS} levels"));
        }
        for (index, level) in levels.iter().enumerate() {
            if !(0..=MAX_AFTER).contains(&level.after) {
                return Err(format!(
                    "level {}: after must be 0 to {MAX_AFTER} seconds",
                    index + 1
                ));
            }
            if index == 0 && level.after != 0 {
                return Err("the first level must have after 0".to_string());
            }
            if index > 0 && level.after < levels[index - 1].after {
                return Err(format!(
                    "level {}: after must not be smaller than the level before",
                    index + 1
                ));
            }
        }
        Ok(Policy { levels })
    }

    /// No alarm: presence calls and types configured without one.
    pub fn none() -> Self {
        Policy::default()
    }

    /// Reads the JSON list of levels; `Err` says what is wrong, for the
    /// admin command and the fallback's log line.
    pub fn parse(json: &str) -> Result<Self, String> {
        let levels: Vec<LevelJson> =
            serde_json::from_str(json).map_err(|e| format!("not a list of levels: {e}"))?;
        let levels = levels
            .into_iter()
            .enumerate()
            .map(|(index, level)| {
                let after = level
                    .after
                    .as_i64()
                    .ok_or_else(|| format!("level {}: after must be whole seconds", index + 1))?;
                let to = Audience::parse(&level.to)
                    .map_err(|problem| format!("level {}: {problem}", index + 1))?;
                Ok(Level { after, to })
            })
            .collect::<Result<Vec<_>, String>>()?;
        Policy::new(levels)
    }

    /// The stored form, which [`Policy::parse`] reads back.
    pub fn to_json(&self) -> String {
        let levels: Vec<LevelJson> = self
            .levels
            .iter()
            .map(|level| LevelJson {
                after: level.after.into(),
                to: level.to.to_string(),
            })
            .collect();
        serde_json::to_string(&levels).expect("levels serialise")
    }

    /// What a type whose hand-edited policy is invalid uses: section at
    /// once, the house after a minute. Never silence.
    pub fn fallback() -> Self {
        Policy {
            levels: vec![
                Level {
                    after: 0,
                    to: Audience::Section,
                },
                Level {
                    after: 60,
                    to: Audience::House,
                },
            ],
        }
    }

    /// The seeded policy of a call type name (DECISIONS §14), or `None` for
    /// a name that is not seeded.
    pub fn seeded(name: &str) -> Option<Self> {
        let levels = |steps: &[(i64, &str)]| Policy {
            levels: steps
                .iter()
                .map(|(after, to)| Level {
                    after: *after,
                    to: Audience::parse(to).expect("seeded audiences parse"),
                })
                .collect(),
        };
        Some(match name {
            "Notruf" | "Flucht" => levels(&[(0, "section"), (60, "house"), (180, "group:Leitung")]),
            "WC" | "Pneumatischer Ruf (REA)" => levels(&[(0, "section"), (120, "house")]),
            "Normalruf" | "Funkelement-Ruf" | "Geräteruf" | "Hotelruf" => {
                levels(&[(0, "section"), (300, "house")])
            }
            "Störung" => levels(&[(0, "group:Technik"), (900, "house")]),
            "Anwesenheit" => Policy::none(),
            _ => return None,
        })
    }

    /// The levels in order of `after` (the first at 0); empty: no alarm.
    pub fn levels(&self) -> &[Level] {
        &self.levels
    }

    /// Whether it has no level: no alarm (presence, or a type configured
    /// without one).
    pub fn is_none(&self) -> bool {
        self.levels.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_back_what_it_writes() {
        for name in ["Notruf", "WC", "Normalruf", "Störung", "Anwesenheit"] {
            let policy = Policy::seeded(name).unwrap();
            assert_eq!(Policy::parse(&policy.to_json()).unwrap(), policy, "{name}");
        }
        assert_eq!(
            Policy::seeded("Notruf").unwrap().to_json(),
            r#"[{"after":0,"to":"section"},{"after":60,"to":"house"},{"after":180,"to":"group:Leitung"}]"#
        );
    }

    #[test]
    fn refuses_invalid_policies_with_the_reason() {
        let cases = [
            ("{}", "not a list of levels"),
            (
                r#"[{"after":5,"to":"section"}]"#,
                "the first level must have after 0",
            ),
            (
                r#"[{"after":0,"to":"section"},{"after":-1,"to":"house"}]"#,
                "level 2: after must be 0 to",
            ),
            (
                r#"[{"after":0,"to":"house"},{"after":60,"to":"station"}]"#,
                "level 2: \"station\" is not section, house or group:<name>",
            ),
            (r#"[{"after":0,"to":"group:"}]"#, "a group needs a name"),
            (r#"[{"after":1.5,"to":"house"}]"#, "whole seconds"),
            (
                r#"[{"after":0,"to":"house"},{"after":60,"to":"section"},{"after":30,"to":"house"}]"#,
                "level 3: after must not be smaller",
            ),
            (r#"[{"after":0,"to":"house","x":1}]"#, "unknown field"),
        ];
        for (json, reason) in cases {
            let problem = Policy::parse(json).unwrap_err();
            assert!(problem.contains(reason), "{json}: {problem}");
        }
        assert_eq!(Policy::parse("[]").unwrap(), Policy::none());
    }

    #[test]
    fn every_seeded_call_type_has_its_seeded_policy() {
        use crate::domain::call_types::default_call_types;
        for t in default_call_types() {
            let policy = Policy::seeded(&t.name);
            assert!(policy.is_some(), "{} has no seeded policy", t.name);
            assert_eq!(t.escalation, policy.unwrap(), "{}", t.name);
        }
        let rea = Policy::seeded("Pneumatischer Ruf (REA)").unwrap();
        assert_eq!(rea.levels()[1].after, 120);
    }

    #[test]
    fn the_fallback_alerts_the_section_then_the_house() {
        assert_eq!(
            Policy::fallback().to_json(),
            r#"[{"after":0,"to":"section"},{"after":60,"to":"house"}]"#
        );
    }
}
