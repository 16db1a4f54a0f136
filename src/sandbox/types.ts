/** The sandbox's own copies of the API's resources (spec part 2; docs/upstream.md for the rest). */
export type OrderStatus = "PENDING" | "CONFIRMED" | "PREPARING" | "READY" | "DELIVERED" | "CANCELLED" | "REFUNDED";
export type OrderType = "DINE_IN" | "TAKEAWAY" | "DELIVERY";

export interface OrderItem {
  id: string;
  menuItemId: string;
  name: string;
  quantity: number;
  price: number;
  notes: string | null;
}

export interface Order {
  id: string;
  restaurantId: string;
  bookingId: string | null;
  type: OrderType;
  status: OrderStatus;
  subtotal: number;
  tax: number;
  tip: number;
  total: number;
  currency: string;
  paidAt: string | null;
  refundedAt: string | null;
  createdAt: string;
  items: OrderItem[];
}

export interface Booking {
  id: string;
  restaurantId: string;
  date: string;
  time: string;
  partySize: number;
  status: "CONFIRMED" | "CANCELLED";
  confirmCode: string;
  diner: { name: string; email: string };
  createdAt: string;
}

export interface MenuItem {
  id: string;
  restaurantId: string;
  name: string;
  description: string;
  price: number;
  currency: string;
  allergens: string[];
  tags: string[];
  stock: number | null;
  updatedAt: string;
}

export interface Review {
  id: string;
  restaurantId: string;
  rating: number;
  comment: string | null;
  author: string;
  createdAt: string;
}

export interface Restaurant {
  id: string;
  name: string;
}

/** Every record of a sandbox, as one run saves them for the next (state-file.ts). */
export interface SandboxRecords {
  restaurants: Restaurant[];
  orders: Order[];
  bookings: Booking[];
  menuItems: MenuItem[];
  reviews: Review[];
}

/** Failures of the sandbox's API and actions, with the status and code of docs/upstream.md. */
export class SandboxError extends Error {
  constructor(
    readonly status: 400 | 401 | 404 | 409 | 429 | 500 | 502 | 503,
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = "SandboxError";
  }
}
