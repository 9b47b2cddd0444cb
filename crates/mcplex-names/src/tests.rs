//! Display names from canonical ids: sanitizing, collisions, long names, and the property that
//! names are always valid, unique and a function of the set of ids.

use proptest::prelude::*;

use crate::{RegistrationTable, ToolId, is_valid_name, sanitize};

#[track_caller]
fn check_names(ids: &[(&str, &str)], expect: &[&str]) {
    let table = RegistrationTable::build(ids.iter().map(|(s, t)| ToolId::new(*s, *t)));
    let names: Vec<&str> = ids
        .iter()
        .map(|(s, t)| {
            table
                .name_of(&ToolId::new(*s, *t))
                .expect("every id has a name")
        })
        .collect();
    assert_eq!(names, expect);
}

#[test]
fn plain_names_are_server_double_underscore_tool() {
    check_names(
        &[("github", "create_issue"), ("fs", "read-file")],
        &["github__create_issue", "fs__read-file"],
    );
}

#[test]
fn invalid_characters_become_underscores() {
    check_names(&[("my server", "get.weather")], &["my_server__get_weather"]);
    assert_eq!(sanitize("héllo"), "h_llo");
    assert_eq!(sanitize(""), "_");
}

#[test]
fn a_collision_keeps_the_exact_name_and_hashes_the_other() {
    check_names(
        &[("a", "b_c"), ("a", "b.c")],
        &["a__b_c", "a__b_c_06a090a5"],
    );
    // Order of arrival changes nothing.
    check_names(
        &[("a", "b.c"), ("a", "b_c")],
        &["a__b_c_06a090a5", "a__b_c"],
    );
}

#[test]
fn double_underscores_inside_names_stay_distinct() {
    // a__b + c and a + b__c share the natural name "a__b__c": neither may be split back by "__".
    let ids = [("a__b", "c"), ("a", "b__c")];
    let table = RegistrationTable::build(ids.iter().map(|(s, t)| ToolId::new(*s, *t)));
    assert_eq!(
        table.resolve("a__b__c"),
        None,
        "both are exact, so both are hashed"
    );
    assert_eq!(table.len(), 2);
    for (s, t) in ids {
        let id = ToolId::new(s, t);
        let name = table.name_of(&id).expect("named");
        assert_eq!(table.resolve(name), Some(&id));
    }
}

#[test]
fn long_names_are_cut_to_64_with_a_hash() {
    let tool = "x".repeat(80);
    let table = RegistrationTable::build([ToolId::new("srv", tool.as_str())]);
    let name = table
        .name_of(&ToolId::new("srv", tool.as_str()))
        .expect("named");
    assert_eq!(name.len(), 64);
    assert!(name.starts_with("srv__xxxx"));
    assert!(is_valid_name(name));
}

#[test]
fn canonical_ids_parse_at_the_first_colon() {
    assert_eq!(
        ToolId::parse("srv:ns:tool"),
        Some(ToolId::new("srv", "ns:tool"))
    );
    assert_eq!(ToolId::parse("nocolon"), None);
    assert_eq!(ToolId::parse(":tool"), None);
}

fn arbitrary_part() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z_]{1,6}",
        "[a-zA-Z0-9 ._:-]{0,12}",
        "\\PC{0,80}",
        Just("__".to_owned()),
    ]
}

proptest! {
    #[test]
    fn names_are_always_valid_unique_and_deterministic(
        ids in proptest::collection::vec((arbitrary_part(), arbitrary_part()), 1..40)
    ) {
        let ids: Vec<ToolId> = ids.into_iter().filter(|(s, _)| !s.is_empty()).map(|(s, t)| ToolId::new(s, t)).collect();
        let table = RegistrationTable::build(ids.clone());
        let mut reversed = ids.clone();
        reversed.reverse();
        let again = RegistrationTable::build(reversed);
        let mut seen = std::collections::HashSet::new();
        for id in &ids {
            let name = table.name_of(id).expect("every id is named");
            prop_assert!(is_valid_name(name), "invalid name {name:?} for {id}");
            prop_assert_eq!(table.resolve(name), Some(id));
            prop_assert_eq!(again.name_of(id), Some(name), "order changed the name of {}", id);
            seen.insert(name.to_owned());
        }
        let distinct: std::collections::HashSet<_> = ids.iter().collect();
        prop_assert_eq!(seen.len(), distinct.len());
    }
}
