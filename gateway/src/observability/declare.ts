// One way to declare a prom-client metric on a registry, so each metrics file
// is a compact table of name, help and labels instead of repeating the
// constructor's option block for every series.
import {
  Counter,
  Gauge,
  Histogram,
  type CounterConfiguration,
  type GaugeConfiguration,
  type HistogramConfiguration,
  type Registry,
} from "prom-client";

/** What a declaration may add besides name, help, labels and registry (collect, buckets...). */
type More<C> = Omit<C, "name" | "help" | "labelNames" | "registers">;

export function counter<L extends string = string>(
  registry: Registry, name: string, help: string, labelNames: readonly L[] = [], more: More<CounterConfiguration<L>> = {},
): Counter<L> {
  return new Counter<L>({ name, help, labelNames, registers: [registry], ...more });
}

export function gauge<L extends string = string>(
  registry: Registry, name: string, help: string, labelNames: readonly L[] = [], more: More<GaugeConfiguration<L>> = {},
): Gauge<L> {
  return new Gauge<L>({ name, help, labelNames, registers: [registry], ...more });
}

export function histogram<L extends string = string>(
  registry: Registry, name: string, help: string, labelNames: readonly L[], buckets: number[], more: More<HistogramConfiguration<L>> = {},
): Histogram<L> {
  return new Histogram<L>({ name, help, labelNames, buckets, registers: [registry], ...more });
}
