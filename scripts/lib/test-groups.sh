# The unit and integration test groups, shared by scripts/test and scripts/flaky. Source it after
# common.sh; each group is a function that takes extra `swift test` arguments (--xunit-output).
#
# Three runs, so that no test is starved of CPU by the rest on a small machine: the broker and bus
# tests time heartbeats in hundreds of milliseconds; the hostile documents (zip bombs, 47 MB
# calendars) keep both cores busy for a minute.

# Swift Testing starts every test of a run at once; on two cores 500 tests that each start
# brokers and services then wait half a minute for the CPU, past heartbeat and catch-up
# deadlines. Twelve at a time keeps both cores busy without that queue.
export SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH="${SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH:-12}"

UNIT_GROUPS=(broker_and_bus calls_over_curve other_suites hostile_documents)

group_title() {
    case "$1" in
        broker_and_bus) echo "the broker and bus tests" ;;
        calls_over_curve) echo "the call tests again over CURVE, with keys the broker checks" ;;
        other_suites) echo "the other unit and integration tests" ;;
        hostile_documents) echo "the hostile-document tests" ;;
        *) echo "$1" ;;
    esac
}

broker_and_bus() { swift test --skip-build --filter 'BrokerTests|BusTests' "$@"; }
calls_over_curve() { STUDYBUS_TEST_BUS_SECURITY=on swift test --skip-build --filter BusCallTests "$@"; }
other_suites() {
    swift test --skip-build --skip SystemTests --skip MultiHostTests --skip 'BrokerTests|BusTests' --skip HostileDocumentTests "$@"
}
hostile_documents() { swift test --skip-build --filter HostileDocumentTests "$@"; }
