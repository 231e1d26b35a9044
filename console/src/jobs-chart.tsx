/**
 * The Overview's jobs per day over the last 30 days (DESIGN §5, "Platforms"): a chart of the jobs
 * created, printed and failed each UTC day, a sentence that says the same in words (the canvas's
 * accessible name, and shown under it), the figures as a table, and a plain sentence when there
 * is nothing to draw.
 */
import type { JSX } from 'preact';
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import type { DrawnChart, JobsPerDay } from './chart-draw.js';
import { messageOf } from './resource.js';
import { Table } from './table.js';
import type { UsageDay } from './types.js';
import { Empty, ErrorText } from './ui.js';
import { dayLabel, dayName, daysOf, formatCount, totalsOf, USAGE_DAYS, useUsage } from './usage.js';

function seriesOf(days: readonly UsageDay[]): JobsPerDay {
  return {
    labels: days.map((d) => dayLabel(d.date)),
    titles: days.map((d) => dayName(d.date)),
    created: days.map((d) => d.jobs_created),
    printed: days.map((d) => d.jobs_printed),
    failed: days.map((d) => d.jobs_failed),
  };
}

/** The days in words: the totals, and the busiest day. */
function summaryOf(days: readonly UsageDay[], orgId: string): string {
  const t = totalsOf(days, orgId);
  const jobs = (n: number) => `${formatCount(n)} ${n === 1 ? 'job' : 'jobs'}`;
  let text = `${jobs(t.jobs_created)} created in the last ${USAGE_DAYS} days, ${formatCount(t.jobs_printed)} printed and ${formatCount(t.jobs_failed)} failed.`;
  const busiest = days.reduce<UsageDay | undefined>(
    (best, d) => (d.jobs_created > (best?.jobs_created ?? 0) ? d : best),
    undefined,
  );
  if (busiest) {
    text += ` The most created in a day: ${formatCount(busiest.jobs_created)}, on ${dayName(busiest.date)}.`;
  }
  return text;
}

/**
 * The chart itself, drawn once Chart.js has loaded and redrawn as the figures change; a picture
 * named `label` and described by the element `describedBy`, the summary in words.
 */
function DayChart(props: { series: JobsPerDay; label: string; describedBy: string }): JSX.Element {
  const canvas = useRef<HTMLCanvasElement>(null);
  const drawn = useRef<DrawnChart | null>(null);
  const latest = useRef(props.series);
  latest.current = props.series;
  const [error, setError] = useState('');
  useEffect(() => {
    let gone = false;
    import('./chart-draw.js')
      .then(({ drawJobsChart }) => {
        if (gone || !canvas.current) return;
        drawn.current = drawJobsChart(canvas.current, latest.current);
      })
      .catch((err) => {
        if (!gone)
          setError(
            `The chart could not be drawn (${messageOf(err)}); the table below has its figures.`,
          );
      });
    return () => {
      gone = true;
      drawn.current?.destroy();
      drawn.current = null;
    };
  }, []);
  useEffect(() => drawn.current?.update(props.series), [props.series]);
  return (
    <>
      <ErrorText error={error} />
      <div class="chart">
        <canvas
          ref={canvas}
          role="img"
          aria-label={props.label}
          aria-describedby={props.describedBy}
        />
      </div>
    </>
  );
}

/** The organization's jobs per day, from its usage (its children's not included). */
export function JobsPerDaySection(props: { orgId: string }): JSX.Element {
  const r = useUsage(props.orgId, false);
  const days = useMemo(() => daysOf(r.data?.items ?? [], props.orgId), [r.data, props.orgId]);
  const series = useMemo(() => seriesOf(days), [days]);
  const any = days.some((d) => d.jobs_created + d.jobs_printed + d.jobs_failed > 0);
  const summary = summaryOf(days, props.orgId);
  return (
    <section class="panel usage-panel" aria-labelledby="ov-per-day">
      <h2 id="ov-per-day">Jobs per day, last {USAGE_DAYS} days</h2>
      <ErrorText error={r.error} />
      {r.data === undefined ? null : !any ? (
        <Empty>
          No jobs in the last {USAGE_DAYS} days. Each day's jobs created, printed and failed show
          here as a chart once there are some.
        </Empty>
      ) : (
        <>
          <DayChart
            series={series}
            label={`Chart of jobs created, printed and failed per day, last ${USAGE_DAYS} days`}
            describedBy="ov-per-day-summary"
          />
          <p class="usage-summary" id="ov-per-day-summary">
            {summary}
          </p>
          <details class="usage-table">
            <summary>Jobs per day as a table</summary>
            <Table
              label="Jobs per day"
              columns={['Day', 'Created', 'Printed', 'Failed']}
              rows={[...days].reverse()}
              row={(d) => (
                <tr key={d.date}>
                  <th scope="row">
                    <time dateTime={d.date}>{dayName(d.date)}</time>
                  </th>
                  <td data-label="Created">{formatCount(d.jobs_created)}</td>
                  <td data-label="Printed">{formatCount(d.jobs_printed)}</td>
                  <td data-label="Failed">{formatCount(d.jobs_failed)}</td>
                </tr>
              )}
            />
          </details>
        </>
      )}
      <p class="small muted">
        UTC days. Spool counts jobs about once a minute, so the latest show a minute or two after
        they happen.
      </p>
    </section>
  );
}
