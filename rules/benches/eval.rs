//! 5-card evaluation speed, ours against rs_poker 5.0.0 in the same run, over the same
//! 100,000 random hands. Run: `cargo bench -p rules --bench eval`.

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use rs_poker::core::{Rankable, Suit as RsSuit, Value as RsValue};
use schemas::Card;

fn hands(n: usize) -> Vec<[Card; 5]> {
    // A fixed LCG keeps the benchmark's hands the same from run to run.
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = || {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (x >> 33) as usize
    };
    (0..n)
        .map(|_| {
            let mut deck: Vec<Card> = Card::deck().collect();
            let mut h = [deck[0]; 5];
            for slot in h.iter_mut() {
                let i = next() % deck.len();
                *slot = deck.swap_remove(i);
            }
            h
        })
        .collect()
}

fn to_rs(c: Card) -> rs_poker::core::Card {
    let suit = match c.suit() {
        schemas::Suit::Spades => RsSuit::Spade,
        schemas::Suit::Clubs => RsSuit::Club,
        schemas::Suit::Hearts => RsSuit::Heart,
        schemas::Suit::Diamonds => RsSuit::Diamond,
    };
    rs_poker::core::Card::new(RsValue::from(c.rank().value() - 2), suit)
}

fn bench(c: &mut Criterion) {
    let ours = hands(100_000);
    let theirs: Vec<[rs_poker::core::Card; 5]> = ours.iter().map(|h| h.map(to_rs)).collect();
    let mut g = c.benchmark_group("eval5");
    g.throughput(Throughput::Elements(ours.len() as u64));
    g.bench_function("roundledger rules::eval5", |b| {
        b.iter(|| {
            let mut acc = 0u32;
            for h in &ours {
                acc ^= rules::eval5(black_box(h)).value();
            }
            acc
        })
    });
    g.bench_function("rs_poker 5.0.0 rank", |b| {
        b.iter(|| {
            let mut acc = 0u16;
            for h in &theirs {
                acc ^= black_box(&h[..]).rank().value_bits();
            }
            acc
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
