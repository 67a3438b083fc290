package com.example.shop;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

public class Cart {
    private final List<String> skus = new ArrayList<>();
    private int total;

    public Cart(int initial) {
        this.total = initial;
    }

    public void add(String sku, int price) {
        Objects.requireNonNull(sku);
        skus.add(sku);
        total += pri<@a>ce;
    }

    public int total() {
        return skus.stream().mapToInt(String::length).sum() + total;
    }

    interface Listener {
        void onAdd(String sku);
    }
}
