/**
 * Jobs per day drawn with Chart.js: the jobs created each day as bars, those printed and failed
 * as lines over them. Loaded on its own (jobs-chart.tsx imports it when a chart is shown), so the
 * rest of the console does not wait for the library; only the parts a bar-and-line chart uses
 * are registered, so the bundle holds no others. Chart.js draws on a canvas and sets styles
 * through the DOM only, which the console's Content-Security-Policy allows.
 */
import {
  BarController,
  BarElement,
  CategoryScale,
  Chart,
  Legend,
  LinearScale,
  LineController,
  LineElement,
  PointElement,
  Tooltip,
} from 'chart.js';

Chart.register(
  BarController,
  BarElement,
  CategoryScale,
  LinearScale,
  LineController,
  LineElement,
  PointElement,
  Legend,
  Tooltip,
);

/** The days in order, with their labels and each series' figure per day. */
export interface JobsPerDay {
  labels: string[];
  /** Each day's label in full, for the tooltip's title. */
  titles: string[];
  created: number[];
  printed: number[];
  failed: number[];
}

export interface DrawnChart {
  update(data: JobsPerDay): void;
  destroy(): void;
}

/** A colour of the stylesheet's palette (base.css), read from where the chart is. */
function colour(element: Element, name: string, fallback: string): string {
  return getComputedStyle(element).getPropertyValue(name).trim() || fallback;
}

/** Draws `data` on `canvas`, sized by the canvas's parent (which must have a height). */
export function drawJobsChart(canvas: HTMLCanvasElement, data: JobsPerDay): DrawnChart {
  const created = colour(canvas, '--accent', '#2f5bd3');
  const printed = colour(canvas, '--ok', '#117a43');
  const failed = colour(canvas, '--danger', '#b42318');
  const text = colour(canvas, '--muted', '#5d6677');
  const grid = colour(canvas, '--line', '#dde1e8');
  let titles = data.titles;
  const line = (label: string, values: number[], color: string) => ({
    type: 'line' as const,
    label,
    data: values,
    borderColor: color,
    backgroundColor: color,
    borderWidth: 2,
    // Points only under the pointer: a month of zeros reads as a line, not a row of dots.
    pointRadius: 0,
    pointHoverRadius: 4,
    pointHitRadius: 6,
    tension: 0,
  });
  const chart = new Chart<'bar' | 'line', number[], string>(canvas, {
    type: 'bar',
    data: {
      labels: data.labels,
      datasets: [
        {
          type: 'bar',
          label: 'Created',
          data: data.created,
          backgroundColor: created,
          borderRadius: 2,
          // Drawn first, so the lines stay on top of the bars (the legend and the tooltip keep
          // the datasets' own order: created, printed, failed).
          order: 2,
        },
        { ...line('Printed', data.printed, printed), order: 1 },
        { ...line('Failed', data.failed, failed), order: 0 },
      ],
    },
    options: {
      responsive: true,
      maintainAspectRatio: false,
      // Figures change once a minute, and a person who asked for less motion gets none.
      animation: false,
      interaction: { mode: 'index', intersect: false },
      scales: {
        x: {
          grid: { display: false },
          ticks: { color: text, maxRotation: 0, autoSkipPadding: 12 },
        },
        y: {
          beginAtZero: true,
          grid: { color: grid },
          border: { display: false },
          ticks: { color: text, precision: 0 },
        },
      },
      plugins: {
        legend: {
          position: 'bottom',
          labels: {
            color: text,
            boxWidth: 12,
            boxHeight: 12,
            sort: (a, b) => (a.datasetIndex ?? 0) - (b.datasetIndex ?? 0),
          },
        },
        tooltip: {
          itemSort: (a, b) => a.datasetIndex - b.datasetIndex,
          callbacks: { title: (items) => titles[items[0]?.dataIndex ?? 0] ?? '' },
        },
      },
    },
  });
  return {
    update(next) {
      titles = next.titles;
      chart.data.labels = next.labels;
      const [c, p, f] = chart.data.datasets;
      if (c) c.data = next.created;
      if (p) p.data = next.printed;
      if (f) f.data = next.failed;
      chart.update();
    },
    destroy: () => chart.destroy(),
  };
}
