//! A coordinator (`sieve serve --workers …`) over three `sieve worker` processes on loopback, all
//! over one MinIO bucket: every answer equals a single-process server's over the same storage;
//! each worker reads only the blocks rendezvous placement gives it; a worker killed is routed
//! around, and one started again takes its share back.

mod common;

use std::time::{Duration, Instant};

use common::worker::{SECRET, Worker};
use common::{Server, free_port, sieve, sql, stderr, stdout};
use sieve_engine::Placement;

/// The queries both servers answer: point lookups present and absent, IN lists, ranges,
/// aggregates, NULLs, and the same with pruning off.
fn queries(present: &str) -> Vec<String> {
    let mut queries = vec![
        "select count(*), sum(c1), count(c3) from t".to_string(),
        format!("select c1, c2, c3 from t where c2 = '{present}'"),
        "select c1, c2 from t where c2 = 'no such key'".to_string(),
        "select c1, c2 from t where c1 = 54321".to_string(),
        "select c1 from t where c1 in (7, 40000, 99999, 123456789) order by c1".to_string(),
        "select c1, c3 from t where c1 between 1000 and 1010 order by c1".to_string(),
        "select c3, count(*) from t group by c3 order by c3 limit 5".to_string(),
        "select count(*) from t where c3 is null".to_string(),
        "select c1 from t where c3 = 17 order by c1 limit 3".to_string(),
        // Sieve's own functions in the fragments workers run: checked arithmetic, MySQL's.
        "select c1 * 2 + 1, upper(c2), locate('9', c2) from t where c1 = 99".to_string(),
        "select count(*), sum(a.c1 - b.c3) from t a join t b on a.c1 = b.c1 where a.c3 = 5"
            .to_string(),
        "select c1 from t where c2 = (select c2 from t where c1 = 7)".to_string(),
    ];
    let unpruned: Vec<String> = queries
        .iter()
        .map(|q| format!("set sieve.pruning = false; {q}"))
        .collect();
    queries.extend(unpruned);
    queries
}

/// The query's output, or its error.
fn try_answer(server: &Server, query: &str) -> Result<String, String> {
    let out = server.mysql(&["-e", &format!("{query} allow filtering")]);
    match out.status.success() {
        true => Ok(stdout(&out)),
        false => Err(stderr(&out)),
    }
}

fn answer(server: &Server, query: &str) -> String {
    try_answer(server, query)
        .unwrap_or_else(|e| panic!("{query}: {e}\nserver log:\n{}", server.log()))
}

/// The workers EXPLAIN ANALYZE says the query's scan asked, or the query's error.
fn try_asked(server: &Server, query: &str) -> Result<std::collections::BTreeSet<String>, String> {
    // A leading `set …;` stays before the EXPLAIN.
    let (settings, query) = query.rsplit_once("; ").unwrap_or(("", query));
    let explain = format!("explain analyze {query}");
    let plan = match settings {
        "" => try_answer(server, &explain)?,
        _ => try_answer(server, &format!("{settings}; {explain}"))?,
    };
    let mut workers = std::collections::BTreeSet::new();
    for part in plan.split("workers=[").skip(1) {
        let list = &part[..part.find(']').expect("closing bracket")];
        workers.extend(list.split_whitespace().map(str::to_string));
    }
    Ok(workers)
}

fn asked(server: &Server, query: &str) -> std::collections::BTreeSet<String> {
    try_asked(server, query)
        .unwrap_or_else(|e| panic!("{query}: {e}\nserver log:\n{}", server.log()))
}

/// A counter of the scan's in EXPLAIN ANALYZE (summed over its tasks).
fn metric(server: &Server, query: &str, name: &str) -> u64 {
    common::plan_counter(&answer(server, &format!("explain analyze {query}")), name)
}

/// The point lookups a coordinator (its metrics on `port`) sent, by worker.
fn lookups_sent(port: u16) -> std::collections::BTreeMap<String, u64> {
    common::prometheus::scrape(port)
        .into_iter()
        .filter_map(|(k, v)| {
            let worker = k.strip_prefix("sieve_worker_lookups_total{worker=\"")?;
            Some((worker.trim_end_matches("\"}").to_string(), v as u64))
        })
        .collect()
}

/// `text`'s lines, sorted: rows without ORDER BY come in any order, through workers or not.
fn sorted(text: &str) -> Vec<String> {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    lines.sort();
    lines
}

/// Waits until `query` contacts no worker: node filters load in the background.
fn wait_until_no_worker_is_asked(server: &Server, query: &str, failure: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while metric(server, query, "workers_contacted") != 0 {
        assert!(Instant::now() < deadline, "{failure}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Table t at `storage`: `inserts` commits of 10,000 rows (so as many locator groups, the unit
/// placed on workers) in blocks of up to 4000, indexed on c1 and c2; c3 has NULLs and repeats.
/// `options` adds to its WITH.
fn make_table(storage: &str, inserts: u64, options: &str) {
    let mut script = format!(
        "create table t (c1 bigint, c2 varchar, c3 int) \
         with (index_columns = 'c1,c2', block_rows = 4000{options});"
    );
    for part in 0..inserts {
        script += &format!(
            "insert into t select n, cast(n * 7919 % 100003 as varchar), \
             case when n % 10 = 0 then null else cast(n % 97 as int) end \
             from (select number + {} as n from numbers(10000));",
            part * 10000
        );
    }
    let out = sql(storage, &script);
    assert!(out.status.success(), "{}", stderr(&out));
}

/// The placement a coordinator over the workers at `urls` computes (it names them as URLs).
fn placement_of(urls: &[String]) -> Placement {
    Placement::new(urls.iter().map(|u| format!("{u}/")).collect())
}

/// The data files of `table` that PyIceberg's step reported writing (`written`), by the paths
/// a coordinator places them by: relative to the root of the local `warehouse`'s store.
fn placed_paths(
    written: &serde_json::Value,
    warehouse: &std::path::Path,
    table: &str,
) -> Vec<String> {
    let root = format!("file://{}/", warehouse.display());
    (written[table]["files"].as_array().unwrap().iter())
        .map(|f| f.as_str().unwrap().strip_prefix(&root).unwrap().to_string())
        .collect()
}

/// A coordinator over `urls`, with the workers' secret and `more` config lines.
fn start_coordinator(storage: &str, urls: &[String], more: &str) -> Server {
    let list: Vec<String> = urls.iter().map(|u| format!("\"{u}\"")).collect();
    let config = format!(
        "workers = [{}]\ncluster_secret = \"{SECRET}\"\n{more}",
        list.join(", ")
    );
    Server::start_on(storage, &config)
}

/// Every query answers the same through the workers as in one process.
fn assert_answers_match(coordinator: &Server, local: &Server, present: &str) {
    for query in queries(present) {
        assert_eq!(
            answer(coordinator, &query),
            answer(local, &query),
            "{query}: the workers' answer differs from one process's"
        );
    }
}

#[test]
fn three_workers_answer_as_one_process_and_survive_losing_one() {
    let base = common::s3_base();
    let storage = format!("{base}/workers-{}", std::process::id());
    // 100k rows in 30 blocks of up to 4000, indexed on c1 and c2, committed in 10 inserts (so
    // 10 locator groups, the unit placed on workers: all on one of 3 workers by chance 1 in
    // 20,000); c3 has NULLs and repeats. A tight error budget gives the node filters 16-bit
    // fingerprints from the first group, so a lookup asks a second worker by chance about 1 in
    // 6,500 (with the default 0.01 the first groups get 8 to 10 bits, and one of this test's
    // lookups asked two workers).
    make_table(&storage, 10, ", max_false_reads = 0.00001");
    let present = (54321u64 * 7919 % 100003).to_string();

    let mut workers: Vec<Worker> = (0..3).map(|_| Worker::start(&storage)).collect();
    let urls: Vec<String> = workers.iter().map(Worker::url).collect();
    let coordinator = start_coordinator(&storage, &urls, "");
    let local = Server::start_on(&storage, "");
    assert_answers_match(&coordinator, &local, &present);

    // Files at a configured location (here the table's own blocks) are read by the coordinator,
    // which holds the location's credentials; workers are not asked to.
    let reader = start_coordinator(
        &storage,
        &urls,
        &format!("[[external_locations]]\nurl = \"{storage}/tables\""),
    );
    let blocks = format!(
        "select count(*), sum(c1) from read_parquet('{storage}/tables/', '.*/blocks/.*[.]parquet')"
    );
    assert_eq!(
        answer(&reader, &blocks),
        answer(&local, "select count(*), sum(c1) from t")
    );
    // Beside a scan of the table, which workers would otherwise run in part.
    let both = format!(
        "select count(*) from (select c1 from read_parquet('{storage}/tables/', '.*/blocks/.*[.]parquet') \
         union all select c1 from t where c1 >= 0) u"
    );
    let rows: u64 = answer(&local, "select count(*) from t")
        .trim()
        .parse()
        .unwrap();
    assert_eq!(answer(&reader, &both).trim(), (2 * rows).to_string());

    // A coordinator without the workers' secret is refused, saying why, and is not taken for
    // a worker failure to route around.
    let stranger = Server::start_on(&storage, &format!("workers = [\"{}\"]", urls[0]));
    let out = stranger.mysql(&["-e", "select count(*) from t"]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("refuses calls without its cluster secret"),
        "{}",
        stderr(&out)
    );
    // A coordinator whose node filters may take no memory asks every owner, and answers the
    // same.
    // The key sorts inside every block's min/max ('5…' < '5x' < '6…'): only a filter rules it
    // out.
    let absent = "select c1 from t where c2 = '5x'";
    let owning = asked(
        &coordinator,
        &format!("set sieve.pruning = false; {absent}"),
    );
    let unfiltered = start_coordinator(&storage, &urls, "node_filter_mib = 0");
    assert_eq!(asked(&unfiltered, absent), owning);
    assert_eq!(answer(&unfiltered, absent), "");
    // A key beyond every block's max is ruled out by min/max alone, node filters or not.
    let beyond = "select c1 from t where c2 = 'no such key'";
    assert!(asked(&unfiltered, beyond).is_empty());

    // Once the node filters have loaded (in the background, on the first lookup), an absent key
    // contacts no worker and a present one only the worker owning its group.
    wait_until_no_worker_is_asked(&coordinator, absent, "node filters never loaded");
    let lookup = format!("select c1 from t where c2 = '{present}'");
    assert_eq!(asked(&coordinator, &lookup).len(), 1);
    // …as EXPLAIN ANALYZE's counters say too; the worker reports the index it caches.
    assert_eq!(metric(&coordinator, absent, "workers_contacted"), 0);
    let owner_count = owning.len() as u64;
    assert_eq!(
        metric(&coordinator, absent, "workers_skipped_by_node_filter"),
        owner_count
    );
    assert_eq!(metric(&coordinator, &lookup, "workers_contacted"), 1);
    assert_eq!(
        metric(&coordinator, &lookup, "workers_skipped_by_node_filter"),
        owner_count - 1
    );
    assert!(metric(&coordinator, &lookup, "index_cache_bytes") > 0);
    // Point lookups on c1, one per commit's group, land on different workers: the groups are
    // spread.
    // The worker each group's lookup asked; an error while a worker's death or return is not
    // noticed yet (a lookup sent to it fails).
    let try_group_owners = |coordinator: &Server| -> Result<Vec<String>, String> {
        (0..10)
            .map(|part| {
                let key = part * 10000 + 17;
                let asked = try_asked(coordinator, &format!("select c2 from t where c1 = {key}"))?;
                assert_eq!(asked.len(), 1, "c1 = {key}: {asked:?}");
                Ok(asked.into_iter().next().unwrap())
            })
            .collect()
    };
    let group_owners =
        |coordinator: &Server| try_group_owners(coordinator).unwrap_or_else(|e| panic!("{e}"));
    // Asks until the placement satisfies `settled`: the coordinator notices a worker's death
    // or return when it next probes (every 0.5 s).
    let placement_where = |coordinator: &Server, settled: &dyn Fn(&[String]) -> bool| {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            match try_group_owners(coordinator) {
                Ok(owners) if settled(&owners) => return owners,
                found => assert!(
                    Instant::now() < deadline,
                    "the placement never settled: {found:?}"
                ),
            }
        }
    };
    let placed = group_owners(&coordinator);
    let owners: std::collections::BTreeSet<String> = placed.iter().cloned().collect();
    assert!(owners.len() >= 2, "every group on one worker: {owners:?}");
    // Each worker loads the routing filters of the groups placed on it, not the table's (in the
    // background, from its first lookup).
    for worker in &workers {
        let owned = placed.iter().filter(|o| **o == worker.url() + "/").count();
        if owned > 0 {
            assert_eq!(worker.routing_groups_loaded(), owned, "{}", worker.url());
        }
    }
    // …and run on that worker, not on the coordinator (datafusion-distributed folds a one-task
    // stage into the coordinator; a lookup's scan has a second, empty task so it is not).
    let plan = answer(&coordinator, &format!("explain analyze {lookup}"));
    assert!(
        plan.contains("local_coordinator_channels=0")
            && plan.contains("remote_coordinator_channels=2"),
        "{plan}"
    );
    // With pruning off every worker owning a group is asked.
    assert_eq!(
        asked(
            &coordinator,
            &format!("set sieve.pruning = false; {lookup}")
        ),
        owners
    );

    // A worker dies: once the coordinator notices (it probes every 0.5 s), its blocks are read
    // by the others and every answer is still whole.
    let port = workers[1].port;
    let lost = workers[1].url() + "/";
    workers[1].kill();
    let moved = placement_where(&coordinator, &|owners| !owners.contains(&lost));
    assert_answers_match(&coordinator, &local, &present);
    // Only its groups moved.
    for (before, after) in placed.iter().zip(moved) {
        assert!(
            after != lost && (before == &lost || before == &after),
            "{before} → {after}"
        );
    }

    // It comes back on the same address and takes its share back.
    workers[1] = Worker::start_with(&storage, port, &[]);
    placement_where(&coordinator, &|owners| owners == placed.as_slice());
    assert_answers_match(&coordinator, &local, &present);

    // A worker killed while queries run: every answer is whole, or the query fails saying a
    // worker failed; none is short.
    let heavy = "select c3, count(*), sum(c1) from t group by c3 order by c3";
    let expected = answer(&local, heavy);
    let outcomes = std::thread::scope(|scope| {
        let (answered, first_answer) = std::sync::mpsc::channel();
        let asker = &coordinator;
        let queries = scope.spawn(move || {
            (0..20)
                .map(|_| {
                    let out = asker.mysql(&["-e", heavy]);
                    let _ = answered.send(());
                    out
                })
                .collect::<Vec<_>>()
        });
        // Killed once the first query has its answer: the next one is on its way.
        first_answer.recv().unwrap();
        workers[2].kill();
        queries.join().unwrap()
    });
    for out in outcomes {
        if out.status.success() {
            assert_eq!(stdout(&out), expected);
        } else {
            assert!(
                stderr(&out).contains("a worker failed during the query"),
                "{}",
                stderr(&out)
            );
        }
    }
    assert_eq!(answer(&coordinator, heavy), expected);

    // An append is seen by the next query through the workers.
    let out = sql(&storage, "insert into t values (100000, 'appended', 1)");
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        answer(&coordinator, "select c1 from t where c2 = 'appended'"),
        "100000\n"
    );
    // The append's group gets its node filter too: absent keys again contact no worker, and the
    // appended key only its group's owner.
    wait_until_no_worker_is_asked(
        &coordinator,
        absent,
        "the appended group's node filter never loaded",
    );
    assert_eq!(
        metric(
            &coordinator,
            "select c1 from t where c2 = 'appended'",
            "workers_contacted"
        ),
        1
    );

    // A DELETE through the coordinator (affected rows as the mysql client reports them) is
    // seen through the workers, and every answer still matches one process's.
    let doomed = "c3 = 17 or c1 = 100000";
    let before = answer(&local, &format!("select count(*) from t where {doomed}"));
    let out = coordinator.mysql(&["-vv", "-e", &format!("delete from t where {doomed}")]);
    assert!(out.status.success(), "{}", stderr(&out));
    let affected = format!("Query OK, {} rows affected", before.trim());
    assert!(stdout(&out).contains(&affected), "{}", stdout(&out));
    let after = answer(&local, &format!("select count(*) from t where {doomed}"));
    assert_eq!(after, "0\n");
    assert_eq!(
        answer(&coordinator, "select c1 from t where c2 = 'appended'"),
        ""
    );
    assert_answers_match(&coordinator, &local, &present);

    // Node filters cannot forget a deleted key: until its group is rewritten, a lookup of it asks
    // the owner, whose index says no. OPTIMIZE merges the ten small groups (and drops the deleted
    // rows); the coordinator loads the new groups' filters and forgets the old, after which the
    // deleted key, like any absent one, contacts no worker.
    let deleted = "select c1 from t where c2 = 'appended'";
    let out = coordinator.mysql(&["-e", "optimize table t"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_answers_match(&coordinator, &local, &present);
    wait_until_no_worker_is_asked(
        &coordinator,
        deleted,
        "the rewritten groups' node filters never ruled the deleted key out",
    );
    assert_eq!(metric(&coordinator, &lookup, "workers_contacted"), 1);
}

/// A point lookup on a coordinator takes the short path to its key's owner: one typed call to
/// each worker that owns a group that may hold a key (what EXPLAIN ANALYZE's distributed scan
/// asks), none for an absent key once node filters have loaded, and one process's answer. A
/// worker killed before the coordinator notices costs the lookup a retry on
/// its groups' next owner, not its answer.
#[test]
fn a_point_lookup_calls_only_its_owners() {
    let base = common::s3_base();
    let storage = format!("{base}/lookups-{}", std::process::id());
    make_table(&storage, 10, ", max_false_reads = 0.00001");
    let mut workers: Vec<Worker> = (0..3).map(|_| Worker::start(&storage)).collect();
    let urls: Vec<String> = workers.iter().map(Worker::url).collect();
    let metrics = free_port();
    let coordinator = start_coordinator(&storage, &urls, &format!("metrics_port = {metrics}"));
    let local = Server::start_on(&storage, "");
    let calls = || lookups_sent(metrics);
    let sent =
        |before: &std::collections::BTreeMap<String, u64>| -> std::collections::BTreeSet<String> {
            let after = calls();
            for (worker, n) in &after {
                let rise = n - before.get(worker).copied().unwrap_or(0);
                assert!(rise <= 1, "{worker} was called {rise} times for one lookup");
            }
            (after.into_iter())
                .filter(|(w, n)| before.get(w).copied().unwrap_or(0) < *n)
                .map(|(w, _)| w)
                .collect()
        };
    // Kept results would answer a repeated lookup without calling anyone.
    let uncached = |q: &str| format!("set sieve.lookup_cache = false; {q}");

    // Node filters load in the background from the first lookup; then an absent key (one that
    // sorts inside every block's min/max) calls no worker.
    let absent = "select c1 from t where c2 = '5x'";
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let before = calls();
        assert_eq!(answer(&coordinator, &uncached(absent)), "");
        if sent(&before).is_empty() {
            break;
        }
        assert!(Instant::now() < deadline, "node filters never loaded");
        std::thread::sleep(Duration::from_millis(200));
    }
    let present = (54321u64 * 7919 % 100003).to_string();
    let lookups = [
        format!("select c1, c2, c3 from t where c2 = '{present}'"),
        format!("select * from t where c2 = '{present}'"),
        "select c2 as v, c1 from t where c1 = 54321".to_string(),
        "select c1, c3 from t where c1 in (7, 40017, 99999, 123456789)".to_string(),
        "select c1 from t where c1 = 7 or c2 = '7919'".to_string(),
        "select c1 from t where c1 in (7, 40017, 99999) limit 2".to_string(),
        "select c1 from t where c1 = 123456789".to_string(),
    ];
    for query in &lookups {
        let before = calls();
        let through = answer(&coordinator, &uncached(query));
        let called = sent(&before);
        let single = answer(&local, query);
        if query.contains("limit 2") {
            // Two of the three rows, whichever two.
            let all = answer(&local, &query.replace(" limit 2", ""));
            assert_eq!(through.lines().count(), 2, "{query}: {through}");
            assert!(
                through.lines().all(|l| all.contains(l)),
                "{query}: {through}"
            );
        } else {
            assert_eq!(
                sorted(&through),
                sorted(&single),
                "{query}: the workers' answer differs"
            );
        }
        // The workers a distributed scan of the same lookup asks, no more. Its LIMIT is left
        // out: the lookup asks every owner and keeps the first rows, while a distributed scan
        // stops when the LIMIT is met, and may not have started every worker's task by then.
        let expected: std::collections::BTreeSet<String> =
            asked(&coordinator, &query.replace(" limit 2", ""))
                .into_iter()
                .collect();
        assert_eq!(called, expected, "{query}");
    }
    // EXPLAIN ANALYZE of a scan that a LIMIT ends before every worker's task ran (such a task
    // sends no metrics) answers; datafusion-distributed's own waited for them forever, in about
    // one try of six here.
    for _ in 0..6 {
        let plan = answer(
            &coordinator,
            "set max_execution_time = 60000; explain analyze select c1 from t limit 1",
        );
        assert!(plan.contains("DistributedExec"), "{plan}");
    }
    // One call for a present key, to the owner of its group.
    let before = calls();
    answer(&coordinator, &uncached(&lookups[0]));
    assert_eq!(sent(&before).len(), 1);
    // A kept result answers a repeated lookup on the coordinator, calling no one.
    answer(&coordinator, &lookups[0]);
    let before = calls();
    assert_eq!(
        answer(&coordinator, &lookups[0]),
        answer(&local, &lookups[0])
    );
    assert!(sent(&before).is_empty());
    // The owner of the present key dies; before the coordinator notices (it probes every
    // 0.5 s), the lookup fails over to the group's next owner and answers whole.
    let before = calls();
    answer(&coordinator, &uncached(&lookups[0]));
    let owner = sent(&before).into_iter().next().unwrap();
    let dead = workers
        .iter_mut()
        .find(|w| owner.starts_with(&w.url()))
        .unwrap();
    dead.kill();
    let expected = answer(&local, &lookups[0]);
    assert_eq!(answer(&coordinator, &uncached(&lookups[0])), expected);
    assert_eq!(answer(&coordinator, &uncached(&lookups[0])), expected);
}

/// The coordinator's links to its workers over TLS, mutual: answers as one process; a
/// coordinator without a certificate the workers trust, or trusting another CA, gets an error
/// (not a worker failure to route around); plain links beyond loopback are refused at start.
#[test]
fn workers_over_mutual_tls_answer_as_one_process() {
    let dir = tempfile::tempdir().unwrap();
    let storage = dir.path().join("data").to_str().unwrap().to_string();
    make_table(&storage, 3, "");
    let present = (12345u64 * 7919 % 100003).to_string();
    // One CA signs the certificate workers and the coordinator present (to each other, and
    // workers to workers in a shuffle); another signs a stranger's.
    let names = ["127.0.0.1".to_string(), "localhost".to_string()];
    let cluster_tls = dir.path().join("cluster-tls");
    sieve_mysql::self_signed(&cluster_tls, &names).unwrap();
    let stranger_tls = dir.path().join("stranger-tls");
    sieve_mysql::self_signed(&stranger_tls, &names).unwrap();
    let path = |dir: &std::path::Path, file: &str| dir.join(file).to_str().unwrap().to_string();
    let flags = [
        "--tls-cert".to_string(),
        path(&cluster_tls, "server-cert.pem"),
        "--tls-key".into(),
        path(&cluster_tls, "server-key.pem"),
        "--tls-ca".into(),
        path(&cluster_tls, "ca.pem"),
        "--tls-client-ca".into(),
        path(&cluster_tls, "ca.pem"),
    ];
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let workers: Vec<Worker> = (0..2)
        .map(|_| Worker::start_with(&storage, 0, &flags))
        .collect();
    let urls: Vec<String> = workers.iter().map(Worker::url).collect();
    assert!(urls[0].starts_with("https://"));
    let tls_config = |ca: &std::path::Path, identity: &std::path::Path| {
        format!(
            "worker_tls_ca = {:?}\nworker_tls_client_cert = {:?}\nworker_tls_client_key = {:?}",
            path(ca, "ca.pem"),
            path(identity, "server-cert.pem"),
            path(identity, "server-key.pem"),
        )
    };
    let trusted = tls_config(&cluster_tls, &cluster_tls);
    let coordinator = start_coordinator(&storage, &urls, &trusted);
    let local = Server::start_on(&storage, "");
    assert_answers_match(&coordinator, &local, &present);
    assert!(
        !asked(&coordinator, "select count(*) from t").is_empty(),
        "the scan ran on the workers"
    );
    // Trusting another CA: a TLS error, not a lost worker to route around. Without a
    // certificate, or with one the workers do not trust: no answer either (TLS 1.3 refuses a
    // client's certificate after the handshake, so the coordinator sees the refusal, or only
    // the connection close, as when a worker dies).
    let untrusted = tls_config(&cluster_tls, &stranger_tls);
    let wary = tls_config(&stranger_tls, &cluster_tls);
    let anonymous = format!("worker_tls_ca = {:?}", path(&cluster_tls, "ca.pem"));
    for (config, surely_tls) in [(wary, true), (untrusted, false), (anonymous, false)] {
        let stranger = start_coordinator(&storage, &urls, &config);
        let out = stranger.mysql(&["-e", "select count(*) from t"]);
        assert!(!out.status.success(), "{config}: {}", stdout(&out));
        let said = stderr(&out);
        let tls = said.contains("TLS between the coordinator and a worker failed: check");
        assert!(
            tls || (!surely_tls && said.contains("a worker failed during the query")),
            "{config}: {said}"
        );
    }
    // https without a CA, and plain http beyond loopback, are refused at start.
    for (workers, why) in [
        (urls[0].as_str(), "https needs worker_tls_ca"),
        ("http://10.0.0.2:7100", "in clear"),
    ] {
        let said = common::serve_refused(&format!("workers = [\"{workers}\"]"));
        assert!(said.contains(why), "{said}");
    }
}

#[test]
fn a_worker_beyond_loopback_needs_a_secret_and_tls() {
    let out = sieve()
        .args([
            "--storage",
            "memory://",
            "worker",
            "--host",
            "0.0.0.0",
            "--port",
            "0",
        ])
        .env_remove("SIEVE_CLUSTER_SECRET")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("refusing to listen on 0.0.0.0 without a cluster secret"),
        "{}",
        stderr(&out)
    );
    let out = sieve()
        .args(["--storage", "memory://", "worker", "--port", "0"])
        .env("SIEVE_CLUSTER_SECRET", "too short")
        .output()
        .unwrap();
    assert!(stderr(&out).contains("at least 16 visible ASCII characters"));
    let out = sieve()
        .args(["--storage", "memory://", "worker", "--host", "0.0.0.0"])
        .args(["--port", "0"])
        .env("SIEVE_CLUSTER_SECRET", SECRET)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("refusing to listen on 0.0.0.0 without TLS"),
        "{}",
        stderr(&out)
    );
}

/// A statement that reads an attached table, other than a point lookup, is spread over the
/// workers as one over Sieve's tables is: each task reads the data files its worker owns (by
/// path, rendezvous, as lookups are placed), planned on the worker from the snapshot the
/// coordinator read; joins with Sieve's tables, subqueries, position and equality deletes
/// answer as in one process. The tasks' counts of files read add up to the files the
/// coordinator chose, and what they read and pruned to what one process shows (EXPLAIN
/// ANALYZE); a scan left in one task is read by the coordinator from its own plan; a worker
/// without the catalog says so.
#[test]
fn a_statement_reading_an_attached_table_is_spread_over_the_workers() {
    let storage = format!("{}/attached-{}", common::s3_base(), std::process::id());
    make_table(&storage, 1, "");
    let warehouse = tempfile::tempdir().unwrap();
    common::pyiceberg::pyiceberg(warehouse.path(), "make");
    let written = common::pyiceberg::pyiceberg(warehouse.path(), "keys");
    common::pyiceberg::pyiceberg(warehouse.path(), "upserts");
    common::pyiceberg::pyiceberg(warehouse.path(), "grouped");
    let catalog = common::pyiceberg::config(warehouse.path());
    let config = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(config.path(), &catalog).unwrap();
    let with_catalog = ["--config", config.path().to_str().unwrap()];
    let workers: Vec<Worker> = (0..3)
        .map(|_| Worker::start_with(&storage, 0, &with_catalog))
        .collect();
    let urls: Vec<String> = workers.iter().map(Worker::url).collect();
    let coordinator = start_coordinator(&storage, &urls, &catalog);
    let local = Server::start_on(&storage, &catalog);
    let made = coordinator.mysql(&["-e", "create index ix_id on lake.ns.keys (id)"]);
    assert!(made.status.success(), "{}", stderr(&made));
    for query in [
        "select count(*), sum(id), min(name), max(name) from lake.ns.keys",
        "select name from lake.ns.keys where id between 1990 and 2010 order by id",
        "select count(*), sum(p.id) from t join lake.ns.people p on p.id = t.c1",
        "select count(*) from t where c1 in (select id + 1 from lake.ns.people where id < 50)",
        "select c2 from t where c1 = (select max(id) from lake.ns.people where id < 9000)",
        "select count(*), min(id), max(id) from lake.ns.people",
        "select id, name from lake.ns.upserts order by id",
        "select k.name, u.name from lake.ns.keys k join lake.ns.upserts u on u.id = k.id \
         order by k.id limit 5",
    ] {
        let answered = answer(&coordinator, query);
        assert_eq!(answered, answer(&local, query), "{query}");
        let plan = answer(&coordinator, &format!("explain analyze {query}"));
        assert!(plan.contains("DistributedExec"), "{query}:\n{plan}");
        assert!(plan.contains("AttachedScanExec"), "{query}:\n{plan}");
    }
    assert_eq!(
        answer(
            &coordinator,
            "select count(*), sum(p.id) from t join lake.ns.people p on p.id = t.c1"
        ),
        "9999\t49994995\n",
        "0 … 9999 but 5, deleted from the people table"
    );
    // A full join on an inequality runs in one task: the attached table's scan on its probe
    // side is left in the coordinator's stage, which reads it from its own plan.
    let full_join = "select count(*), sum(a.id), sum(b.c1) from (select c1 from t where c1 < 20) b \
                     full join (select id from lake.ns.people where id < 20) a on a.id < b.c1";
    assert_eq!(answer(&coordinator, full_join), answer(&local, full_join));
    assert_eq!(answer(&coordinator, full_join), "178\t1089\t2295\n");
    let plan = answer(&coordinator, &format!("explain analyze {full_join}"));
    let (root, _) = plan
        .split_once("Stage 1 ──")
        .expect("a stage on the workers");
    assert!(root.contains("AttachedScanExec"), "{plan}");
    // The keys' 8 files, each read by the task sent to its owner by rendezvous over the
    // workers' names, whichever the paths' random names make those.
    let placement = placement_of(&urls);
    let files = placed_paths(&written, warehouse.path(), "ns.keys");
    let mut owned = vec![0; urls.len()];
    for path in &files {
        owned[placement.owner(path)] += 1;
    }
    owned.retain(|&n| n > 0);
    owned.sort_unstable();
    let plan = answer(
        &coordinator,
        "explain analyze select count(*) from lake.ns.keys",
    );
    let mut tasks: Vec<usize> = (plan.split("AttachedScanExec: ").skip(1))
        .map(|task| {
            let files = task.split_once(", files=").unwrap().1;
            let end = files.find(|c: char| !c.is_ascii_digit()).unwrap();
            files[..end].parse().unwrap()
        })
        .filter(|&n| n > 0)
        .collect();
    tasks.sort_unstable();
    assert_eq!(tasks, owned, "{plan}");
    assert_eq!(common::plan_counter(&plan, "blocks_read"), 8, "{plan}");
    assert_eq!(common::plan_counter(&plan, "blocks_total"), 8, "{plan}");
    // Scans whose filter the index reads: each worker given files loads its own files'
    // entries and no other's, and one given none loads nothing (a scan of one file's keys
    // has one owner, and a second, empty task on it).
    for filtered in [
        "select count(*) from lake.ns.keys where id > 0",
        "select count(*), sum(id) from lake.ns.keys where id between 4100 and 4200",
    ] {
        assert_eq!(answer(&coordinator, filtered), answer(&local, filtered));
    }
    for worker in &workers {
        let url = worker.url() + "/";
        let mine = (files.iter())
            .filter(|path| placement.workers()[placement.owner(path)] == url)
            .count();
        let loaded = worker.attached_index_files_loaded();
        assert_eq!(loaded, (mine > 0).then_some(mine), "{url}");
    }
    // What the tasks read and pruned adds up to what one process shows: the files the
    // coordinator's filters ruled out, the row groups each worker's share of the index ruled
    // out inside the files it read, and what the Parquet scans below opened (a lookup taken
    // off the short path is such a scan).
    let made = coordinator.mysql(&["-e", "create index ix_gid on lake.ns.grouped (id)"]);
    assert!(made.status.success(), "{}", stderr(&made));
    for (query, counts) in [
        (
            "select name from lake.ns.grouped where id = 4150",
            [1, 1, 0, 7, 1],
        ),
        (
            "select name from lake.ns.keys where id in (10, 4150) order by id",
            [8, 2, 6, 0, 2],
        ),
    ] {
        let off = format!("set sieve.short_path = false; {query}");
        assert_eq!(answer(&coordinator, &off), answer(&local, query), "{query}");
        let explain = format!("set sieve.short_path = false; explain analyze {query}");
        let (here, there) = (answer(&local, &explain), answer(&coordinator, &explain));
        assert!(there.contains("AttachedScanExec"), "{there}");
        let names = [
            "blocks_total",
            "blocks_read",
            "blocks_pruned_by_filter",
            "row_groups_pruned_by_filter",
            "files_opened",
        ];
        for (name, count) in names.into_iter().zip(counts) {
            assert_eq!(common::plan_counter(&here, name), count, "{name}: {here}");
            assert_eq!(common::plan_counter(&there, name), count, "{name}: {there}");
        }
    }
    // A worker without the catalog cannot plan its share, and says why.
    let bare = Worker::start(&storage);
    let elsewhere = start_coordinator(&storage, &[bare.url()], &catalog);
    let refused = try_answer(&elsewhere, "select count(*) from lake.ns.keys").unwrap_err();
    assert!(
        refused.contains("this worker has no Iceberg catalog for lake.ns"),
        "{refused}"
    );
}

/// A session's settings hold on the workers that read for it: with `SET sieve.data_cache =
/// false` on a coordinator, its worker fetches the pages of the session's lookups and scans,
/// of Sieve's tables and of attached ones, that its data cache holds (a lookup carries the
/// settings; a scan's tasks carry them as headers). Counted by the worker's own metrics, which
/// see its scans' reads because its scans and lookups share one storage and its caches.
#[test]
fn a_sessions_settings_hold_on_its_workers() {
    let storage = format!("{}/settings-{}", common::s3_base(), std::process::id());
    make_table(&storage, 2, "");
    let warehouse = tempfile::tempdir().unwrap();
    common::pyiceberg::pyiceberg(warehouse.path(), "make");
    common::pyiceberg::pyiceberg(warehouse.path(), "keys");
    let catalog = common::pyiceberg::config(warehouse.path());
    let config = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(config.path(), &catalog).unwrap();
    let metrics = free_port();
    let flags = [
        "--config",
        config.path().to_str().unwrap(),
        "--metrics-port",
        &metrics.to_string(),
    ];
    let worker = Worker::start_with(&storage, 0, &flags);
    let coordinator = start_coordinator(&storage, &[worker.url()], &catalog);
    let made = coordinator.mysql(&["-e", "create index ix_id on lake.ns.keys (id)"]);
    assert!(made.status.success(), "{}", stderr(&made));
    // The worker's data cache hits and GET requests so far.
    let reads = || {
        let m = common::prometheus::scrape(metrics);
        let count = |name: &str| m.get(name).copied().unwrap_or(0.0) as u64;
        (
            count("sieve_cache_hits_total{cache=\"data\"}"),
            count("sieve_object_store_requests_total{operation=\"get\"}"),
        )
    };
    let present = (4321u64 * 7919 % 100003).to_string();
    for query in [
        format!("select c1 from t where c2 = '{present}'"),
        "select sum(c1) from t where c3 = 5".to_string(),
        "select name from lake.ns.keys where id = 4321".to_string(),
        "select count(*), sum(score) from lake.ns.keys where score > 100".to_string(),
    ] {
        // Kept results would answer a lookup asked again without reading.
        let cached = format!("set sieve.lookup_cache = false; {query}");
        let want = answer(&coordinator, &cached);
        assert_ne!(want, "", "{query}");
        let before = reads();
        assert_eq!(answer(&coordinator, &cached), want, "{query}");
        let hit = reads();
        assert!(
            hit.0 > before.0,
            "{query}: the worker's data cache held nothing"
        );
        let uncached = format!("set sieve.data_cache = false; {cached}");
        assert_eq!(answer(&coordinator, &uncached), want, "{query}");
        let fetched = reads();
        assert_eq!(
            fetched.0, hit.0,
            "{query}: the data cache was read, though off"
        );
        assert!(
            fetched.1 > hit.1,
            "{query}: nothing fetched with the data cache off"
        );
    }
}

/// A statement whose scans ran on the workers is logged with what they read, as one process
/// logs it: a scan's counts come back with its tasks' metrics after the last row (the
/// coordinator records the statement once they have, so the query log is read until it holds
/// it), a point lookup's with each worker's answer.
#[test]
fn a_statement_run_by_workers_is_logged_with_what_they_read() {
    let storage = format!("{}/logged-{}", common::s3_base(), std::process::id());
    make_table(&storage, 2, "");
    let workers: Vec<Worker> = (0..2).map(|_| Worker::start(&storage)).collect();
    let urls: Vec<String> = workers.iter().map(Worker::url).collect();
    let coordinator = start_coordinator(&storage, &urls, "");
    let local = Server::start_on(&storage, "");
    let logged = |server: &Server, query: &str| {
        let log = format!(
            "select blocks_read from sieve_query_log() where statement = '{}'",
            format!("{query} allow filtering").replace('\'', "''")
        );
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let found = answer(server, &log);
            if !found.is_empty() {
                return found;
            }
            assert!(Instant::now() < deadline, "{query} was never logged");
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    let scan = "select sum(c1) from t where c3 = 5";
    assert_eq!(answer(&coordinator, scan), answer(&local, scan));
    // Every block of the two inserts (3 each), read by the workers owning them.
    assert_eq!(metric(&coordinator, scan, "blocks_read"), 6);
    assert_eq!(logged(&local, scan), "6\n");
    assert_eq!(logged(&coordinator, scan), "6\n");
    // A lookup (its rows not kept) reads the one block holding its key.
    let present = (4321u64 * 7919 % 100003).to_string();
    let lookup = format!("select c1 from t where c2 = '{present}'");
    for server in [&coordinator, &local] {
        let uncached = format!("set sieve.lookup_cache = false; {lookup}");
        assert_eq!(answer(server, &uncached), "4321\n");
        assert_eq!(logged(server, &lookup), "1\n");
    }
}

/// A point lookup of an attached Iceberg table on a coordinator is read by the workers that own
/// the data files the coordinator's index and manifest bounds leave (by path, rendezvous), each
/// planning the coordinator's snapshot from its metadata file: the answers are one process's
/// (rows deleted by a rewrite, by position and by equality; IN, OR, LIMIT), a present key in
/// one file calls one worker once, an absent key the index rules out calls none, a worker lost
/// mid-lookup costs a retry on the file's next owner, and a worker without the catalog says
/// so.
#[test]
fn an_attached_tables_lookup_is_read_by_the_owners_of_its_files() {
    let storage = format!(
        "{}/attached-lookups-{}",
        common::s3_base(),
        std::process::id()
    );
    let warehouse = tempfile::tempdir().unwrap();
    common::pyiceberg::pyiceberg(warehouse.path(), "make");
    let written = common::pyiceberg::pyiceberg(warehouse.path(), "keys");
    common::pyiceberg::pyiceberg(warehouse.path(), "upserts");
    let catalog = common::pyiceberg::config(warehouse.path());
    let config = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(config.path(), &catalog).unwrap();
    let with_catalog = ["--config", config.path().to_str().unwrap()];
    let mut workers: Vec<Worker> = (0..3)
        .map(|_| Worker::start_with(&storage, 0, &with_catalog))
        .collect();
    let urls: Vec<String> = workers.iter().map(Worker::url).collect();
    let metrics = free_port();
    let coordinator = start_coordinator(
        &storage,
        &urls,
        &format!("metrics_port = {metrics}\n{catalog}"),
    );
    let local = Server::start_on(&storage, &catalog);
    let made = coordinator.mysql(&["-e", "create index ix_name on lake.ns.keys (name)"]);
    assert!(made.status.success(), "{}", stderr(&made));
    let uncached = |q: &str| format!("set sieve.lookup_cache = false; {q}");
    let called = |query: &str| {
        let before = lookups_sent(metrics);
        let through = answer(&coordinator, &uncached(query));
        let after = lookups_sent(metrics);
        let calls: u64 = after.values().sum::<u64>() - before.values().sum::<u64>();
        let workers = (after.iter())
            .filter(|(w, n)| before.get(*w).copied().unwrap_or(0) < **n)
            .count();
        (through, calls, workers)
    };
    for query in [
        "select name from lake.ns.keys where id = 4321",
        "select id, name from lake.ns.keys where id in (5, 1500, 7999, 123456)",
        "select id from lake.ns.keys where id = 7 or name = 'k4000'",
        "select * from lake.ns.keys where name = 'k6001'",
        "select name from lake.ns.people where id in (5, 6, 10000, 10002, 20000)",
        "select id, name from lake.ns.upserts where id in (3, 500, 999, 7, 1000, 1)",
        "select id from lake.ns.keys where name = 'k12x'",
    ] {
        let (through, calls, workers) = called(query);
        assert_eq!(sorted(&through), sorted(&answer(&local, query)), "{query}");
        assert!(calls == workers as u64, "{query}: a worker called twice");
        assert!(
            through.is_empty() || calls >= 1,
            "{query}: answered without a worker"
        );
    }
    // One file holds the key: its owner is called once. The index rules out every file for a
    // name between their bounds that none holds: no one is called.
    let (_, calls, _) = called("select name from lake.ns.keys where id = 4321");
    assert_eq!(calls, 1);
    let (through, calls, _) = called("select id from lake.ns.keys where name = 'k12x'");
    assert_eq!((through.as_str(), calls), ("", 0));
    // The keys' files (8, of 1000 ids each) are read by their owners by rendezvous over the
    // three workers' names, whichever the paths' random names make those.
    let placement = placement_of(&urls);
    let files = placed_paths(&written, warehouse.path(), "ns.keys");
    assert_eq!(files.len(), 8, "{files:?}");
    let owner = |file: &str| placement.workers()[placement.owner(file)].clone();
    let placed: std::collections::BTreeSet<String> = files.iter().map(|f| owner(f)).collect();
    let mut owners = std::collections::BTreeSet::new();
    for id in (0..8).map(|file| file * 1000 + 17) {
        let before = lookups_sent(metrics);
        answer(
            &coordinator,
            &uncached(&format!("select name from lake.ns.keys where id = {id}")),
        );
        let after = lookups_sent(metrics);
        owners.extend(
            (after.into_iter())
                .filter(|(w, n)| before.get(w).copied().unwrap_or(0) < *n)
                .map(|(w, _)| w),
        );
    }
    assert_eq!(owners, placed);
    // Each worker holds the index entries of its own files only.
    for worker in &workers {
        let url = worker.url() + "/";
        let owned = files.iter().filter(|f| owner(f) == url).count();
        let loaded = worker.attached_index_files_loaded();
        assert_eq!(loaded, (owned > 0).then_some(owned), "{url}");
    }
    // The coordinator holds every file's entries, without the slices only reads use.
    let log = coordinator.log();
    let (_, last) = log
        .rsplit_once(" loaded: entries of ")
        .expect("the index loaded");
    let held = last.lines().next().unwrap();
    assert!(
        held.starts_with("8 data files, ")
            && held.ends_with(" (without slices, to route reads to workers)"),
        "{held}"
    );
    let limited = "select id from lake.ns.keys where id in (5, 1500, 7999) limit 2";
    let through = answer(&coordinator, &uncached(limited));
    assert_eq!(through.lines().count(), 2, "{through}");
    assert!(
        through.lines().all(|l| ["5", "1500", "7999"].contains(&l)),
        "{through}"
    );
    // The owner of the key's file dies: the lookup is asked again of the live workers, and
    // the file's next owner by rendezvous reads it.
    let lookup = "select name from lake.ns.keys where id = 4321";
    let before = lookups_sent(metrics);
    answer(&coordinator, &uncached(lookup));
    let (owner, _) = (lookups_sent(metrics).into_iter())
        .find(|(w, n)| before.get(w).copied().unwrap_or(0) < *n)
        .expect("a worker read the key's file");
    let dead = workers.iter_mut().find(|w| owner.starts_with(&w.url()));
    dead.expect("the owner is one of the workers").kill();
    let expected = answer(&local, lookup);
    assert_eq!(expected, "k4321\n");
    assert_eq!(answer(&coordinator, &uncached(lookup)), expected);
    assert_eq!(answer(&coordinator, &uncached(lookup)), expected);
    // A worker not given the catalog refuses the lookup, saying what it lacks.
    let bare = Worker::start(&storage);
    let alone = start_coordinator(&storage, &[bare.url()], &catalog);
    let refused = try_answer(&alone, "select name from lake.ns.keys where id = 4321").unwrap_err();
    assert!(
        refused.contains("has no Iceberg catalog for lake.ns"),
        "{refused}"
    );
}
